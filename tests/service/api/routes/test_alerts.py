"""The alert routes (service.api.routes.alerts) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine

from tests.conftest import ADMIN_TOKEN
from tests.documents import document, post_history, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import runner_token

BEFORE = {"k1": 100.0, "k2": 100.0}
AFTER = {"k1": 125.0, "k2": 140.0}
MAX_ID = 2**31 - 1
GROUP_TRIAGE = "/api/v1/alerts/groups/triage"


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def regress(client: httpx.Client) -> dict[str, dict]:
    """c0..c2 steady, then `head` slows k1 by 25% and k2 by 40%: one suspected alert each (k2's,
    opened second, is the newest); besides, acme/other has a run and no alert. By kernel."""
    labels = post_history(client, 3, BEFORE)
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=9,
                    medians=AFTER, seed=9)  # fmt: skip
    assert client.post("/api/v1/runs", json=head).status_code == 201
    other = document(commit="o1", repository="acme/other", medians={"k1": 1.0})
    assert client.post("/api/v1/runs", json=other).status_code == 201
    return {a["series"]["kernel"]: a for a in client.get("/api/v1/alerts").json()}


def ids(client: httpx.Client, path: str = "/api/v1/alerts", **query: object) -> list[int]:
    answer = client.get(path, params=query)
    assert answer.status_code == 200, answer.text
    return [a["id"] for a in answer.json()]


def confirm(server: LiveServer, engine: Engine) -> None:
    """The confirmation job measures head and base interleaved, head as slow as before: the
    suspected alerts open."""
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        job = claim["job"]
        head = document(commit="head", medians=AFTER, seed=70)
        base = document(commit=job["payload"]["base_sha"], medians=BEFORE, seed=71)
        head.update(job_id=job["id"], lease_token=claim["attempt_token"], paired_base=base)
        assert runner.post("/api/v1/runs", json=head).status_code == 201


def test_alerts_are_listed_newest_first_and_one_is_answered_with_its_events(
    client: httpx.Client,
) -> None:
    alerts = regress(client)
    listed = client.get("/api/v1/alerts").json()
    assert [a["series"]["kernel"] for a in listed] == ["k2", "k1"]
    assert listed[0]["id"] > listed[1]["id"]
    k1 = alerts["k1"]
    assert (k1["state"], k1["branch"], k1["commit"], k1["base_commit"]) == (
        "suspected", "main", sha_for("head"), sha_for("c2")
    )  # fmt: skip
    assert k1["change"] == pytest.approx(0.25, abs=0.01)
    assert alerts["k2"]["change"] == pytest.approx(0.40, abs=0.01)
    assert k1["series"]["repository"] == "acme/kernels" and k1["series"]["metric"] == "duration"
    assert k1["summary"] == "gemm_fwd 1024³ k1 +25.0%: kernel k1 +25%"
    assert k1["confirmed_change"] is None and k1["fixed_by_commit"] is None
    assert k1["events"] == []  # a list leaves the events to the alert's own answer
    one = client.get(f"/api/v1/alerts/{k1['id']}").json()
    assert {k: v for k, v in one.items() if k != "events"} == {
        k: v for k, v in k1.items() if k != "events"
    }
    (event,) = one["events"]
    assert (event["from_state"], event["to_state"], event["actor"]) == (
        None, "suspected", "kernelwatch"
    )  # fmt: skip
    assert event["note"].startswith("regressed +25.0%")


def test_the_list_filters_by_state_repository_commit_series_and_limit(client: httpx.Client) -> None:
    alerts = regress(client)
    k1, k2 = alerts["k1"]["id"], alerts["k2"]["id"]
    assert ids(client, state="suspected") == ids(client, state="all") == [k2, k1]
    assert ids(client, state="open") == [] and ids(client, state=["open", "suspected"]) == [k2, k1]
    assert ids(client, repository="acme/kernels") == [k2, k1]
    assert ids(client, repository="acme/other") == []
    # A prefix of 4 digits, in either case, names the commit the alerts were found at.
    assert ids(client, commit=sha_for("head")[:4].upper()) == [k2, k1]
    assert ids(client, commit=sha_for("c2")) == []
    assert ids(client, series=alerts["k1"]["series"]["id"]) == [k1]
    assert ids(client, limit=1) == [k2]


def test_the_list_refuses_query_values_it_cannot_take(client: httpx.Client) -> None:
    for query, status, says in [
        ({"state": "closed"}, 422, "query.state[0]"),
        ({"commit": "abc"}, 422, "query.commit"),  # under 4 digits
        ({"commit": "head"}, 422, "query.commit"),
        ({"series": 0}, 422, "query.series"),
        ({"series": MAX_ID + 1}, 422, "query.series"),
        ({"limit": 1001}, 422, "query.limit"),
        ({"repository": "acme/none"}, 404, "no repository 'acme/none'"),
        ({"kernel": "k1"}, 400, "unknown query parameter 'kernel'"),
    ]:
        answer = client.get("/api/v1/alerts", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query


def test_an_alert_that_is_not_there_or_cannot_be(client: httpx.Client) -> None:
    for path, status, says in [
        ("/api/v1/alerts/99", 404, "no alert 99"),
        (f"/api/v1/alerts/{MAX_ID}", 404, f"no alert {MAX_ID}"),
        ("/api/v1/alerts/0", 422, "path.alert_id"),
        (f"/api/v1/alerts/{MAX_ID + 1}", 422, "path.alert_id"),
        ("/api/v1/alerts/first", 404, "no such endpoint"),
    ]:
        for answer in (client.get(path), client.patch(path, json={"state": "invalid"})):
            assert answer.status_code == status, answer.text
            assert says in answer.json()["detail"], path


def test_a_suspected_alert_may_only_be_marked_invalid(client: httpx.Client) -> None:
    alert = regress(client)["k1"]
    path = f"/api/v1/alerts/{alert['id']}"
    for body, says in [
        ({"state": "closed"}, "body.state"),
        ({"state": "suspected"}, "body.state"),  # only the service suspects
        ({}, "body.state"),
        ({"state": "invalid", "actor": ""}, "body.actor"),
        ({"state": "invalid", "why": "x"}, "body.why"),
    ]:
        answer = client.patch(path, json=body)
        assert answer.status_code == 422, answer.text
        assert says in answer.json()["detail"], body
    early = client.patch(path, json={"state": "acknowledged"})
    assert early.status_code == 409
    assert early.json()["detail"] == (
        f"alert {alert['id']} is suspected: only confirmed alerts are triaged (it can still be "
        "marked invalid)"
    )
    assert [e["to_state"] for e in client.get(path).json()["events"]] == ["suspected"]
    done = client.patch(path, json={"state": "invalid", "actor": "ada", "note": "a noisy host"})
    assert done.status_code == 200, done.text
    body = done.json()
    assert (body["state"], body["updated_by"], body["note"]) == ("invalid", "ada", "a noisy host")
    last = body["events"][-1]
    assert (last["from_state"], last["to_state"], last["actor"], last["note"]) == (
        "suspected", "invalid", "ada", "a noisy host"
    )  # fmt: skip
    assert client.get(path).json()["state"] == "invalid"


def test_a_confirmed_alert_is_acknowledged_then_fixed_by_the_newest_commit(
    server: LiveServer, engine: Engine, client: httpx.Client
) -> None:
    alert = regress(client)["k1"]
    confirm(server, engine)
    path = f"/api/v1/alerts/{alert['id']}"
    assert client.get(path).json()["state"] == "open"
    acked = client.patch(path, json={"state": "acknowledged"})
    assert acked.status_code == 200, acked.text
    assert (acked.json()["state"], acked.json()["updated_by"]) == ("acknowledged", "admin")
    fixed = client.patch(path, json={"state": "fixed"}).json()
    # No fixing commit was measured: the newest commit of the series is taken as the fix.
    assert (fixed["state"], fixed["fixed_by_commit"]) == ("fixed", sha_for("head"))
    assert [e["to_state"] for e in fixed["events"]][-2:] == ["acknowledged", "fixed"]


def test_triage_needs_the_admin_token(server: LiveServer, client: httpx.Client) -> None:
    alert = regress(client)["k1"]
    for token in (None, "wrong-token"):
        with server.client(token) as anyone:
            single = anyone.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "invalid"})
            group = anyone.post(GROUP_TRIAGE, json={"alert_ids": [alert["id"]], "state": "invalid"})
            # Reads are open on this server: the same caller may read what it may not change.
            assert anyone.get(f"/api/v1/alerts/{alert['id']}").status_code == 200
        assert (single.status_code, group.status_code) == (401, 401), token
    assert client.get(f"/api/v1/alerts/{alert['id']}").json()["state"] == "suspected"


def test_groups_are_listed_newest_first_and_filtered(client: httpx.Client) -> None:
    alerts = regress(client)
    groups = client.get("/api/v1/alerts/groups").json()
    # No ncu capture names a shared cause: each alert is a group of its own.
    assert [g["alert_ids"] for g in groups] == [[alerts["k2"]["id"]], [alerts["k1"]["id"]]]
    first = groups[0]
    assert first["headline"] == alerts["k2"]["summary"]
    assert first["key"] == {"repository": "acme/kernels", "branch": "main",
                            "commit": sha_for("head"), "kernel": None, "cause": None}  # fmt: skip
    assert first["states"] == ["suspected"] and first["cause"] is None
    assert [a["id"] for a in first["alerts"]] == first["alert_ids"]
    assert len(client.get("/api/v1/alerts/groups", params={"limit": 1}).json()) == 1
    assert client.get("/api/v1/alerts/groups", params={"state": "open"}).json() == []
    other = client.get("/api/v1/alerts/groups", params={"repository": "acme/other"})
    assert other.json() == []
    for query, status in [
        ({"state": "all"}, 422),  # unlike the list's, no "all"
        ({"limit": 0}, 422),
        ({"repository": "acme/none"}, 404),
        ({"commit": sha_for("head")}, 400),
    ]:
        assert client.get("/api/v1/alerts/groups", params=query).status_code == status, query


def test_a_group_is_triaged_all_or_none(client: httpx.Client) -> None:
    for body, says in [
        ({"alert_ids": [], "state": "invalid"}, "body.alert_ids"),
        ({"alert_ids": [0], "state": "invalid"}, "body.alert_ids[0]"),
        ({"alert_ids": [1], "state": "dismissed"}, "body.state"),
        ({"alert_ids": [1], "state": "invalid", "ids": [2]}, "body.ids"),
    ]:
        answer = client.post(GROUP_TRIAGE, json=body)
        assert answer.status_code == 422, answer.text
        assert says in answer.json()["detail"], body
    alerts = regress(client)
    both = [alerts["k1"]["id"], alerts["k2"]["id"]]
    refused = client.post(GROUP_TRIAGE, json={"alert_ids": both, "state": "acknowledged"})
    assert refused.status_code == 409
    assert sorted(r["id"] for r in refused.json()["refused"]) == both
    missing = client.post(GROUP_TRIAGE, json={"alert_ids": [both[0], 999], "state": "invalid"})
    assert missing.status_code == 404 and missing.json()["missing"] == [999]
    assert {a["state"] for a in client.get("/api/v1/alerts").json()} == {"suspected"}
    done = client.post(GROUP_TRIAGE, json={"alert_ids": both, "state": "invalid", "actor": "ada",
                                           "note": "one bad host"})  # fmt: skip
    assert done.status_code == 200, done.text
    assert [(a["id"], a["state"], a["updated_by"]) for a in done.json()] == [
        (both[0], "invalid", "ada"), (both[1], "invalid", "ada")
    ]  # fmt: skip
    assert {a["events"][-1]["note"] for a in done.json()} == {"one bad host"}

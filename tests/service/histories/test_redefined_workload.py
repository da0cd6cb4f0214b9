"""A workload redefined in place, through the real service over HTTP (SQLite and PostgreSQL):
`reduce(blocks=1056)` becomes `reduce(blocks=132)`, the same kernels doing the same work under
another launch setting, 216% slower. The new series keeps its own identity, but its first result
is judged against the old series' level: on the commit page, in its metrics, in the alerts (the
confirmation measuring each side as it was defined) and as one line on the trends page. A sweep
whose sizes changed is no redefinition."""

from __future__ import annotations

import httpx
from sqlalchemy import Engine

from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server, push_payload
from tests.service.evaluation.alerts.test_lifecycle import runner_token
from tests.service.histories.test_step_and_fix import (  # noqa: F401
    admin,
    live,
    new_runner,
    settle,
)

KERNELS = ["reduce_partial", "reduce_final"]


def run_of(i: int, workloads: list[tuple[dict, float]], seed: int = 0) -> dict:
    """Commit c<i> on the main line, one `reduce` workload per (params, median us)."""
    labels = [f"c{j}" for j in range(i)]
    medians = {f"k{n}": median for n, (_, median) in enumerate(workloads)}
    doc = document(commit=f"c{i}", parents=labels[-1:], ancestors=labels[::-1], minutes=i,
                   seed=seed * 100 + i, medians=medians)  # fmt: skip
    for w, (params, _) in zip(doc["workloads"], workloads, strict=True):
        size = params.get("n", 1 << 24) / (1 << 24)  # the work: a size, never a launch setting
        w.update(name="reduce", params=params, kernels=KERNELS, flops=6.7e7 * size,
                 bytes=2.7e8 * size)  # fmt: skip
        w["timing"]["kernel"] = "reduce"
    return doc


def metric(client: httpx.Client, i: int, params: dict) -> dict:
    body = client.get(f"/api/v1/commits/{sha_for(f'c{i}')}/metrics").json()
    (found,) = [w for w in body["workloads"] if w["params"] == params]
    return {**found["kernels"][0]["metrics"][0], "absent": body["absent"]}


def test_a_launch_setting_changed_in_place_is_judged_against_the_old_definition(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    old, new = {"blocks": 1056}, {"blocks": 132}
    for i in range(6):
        assert admin.post("/api/v1/runs", json=run_of(i, [(old, 120.0)])).status_code == 201
    assert admin.post("/api/v1/runs", json=run_of(6, [(new, 380.0)])).status_code == 201
    settle(engine)
    redefined = metric(admin, 6, new)
    assert redefined["verdict"] == "regressed"
    assert 2.1 < redefined["change"] < 2.25  # +216%
    analysis = redefined["analysis"]
    assert analysis["redefined_from_series"] is not None
    assert "redefined in place: reduce blocks=1056 → reduce blocks=132" in analysis["note"]
    assert redefined["baseline"]["commit"] == sha_for("c5")  # the old series' nearest result
    (gone,) = redefined["absent"]
    assert gone["params"] == old and gone["verdict"] == "missing"
    assert f"measured as series {redefined['series_id']}" in gone["note"]
    page = admin.get(f"/commits/{sha_for('c6')}").text
    assert "redefined in place" in page
    (alert,) = admin.get("/api/v1/alerts").json()
    alert = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert (
        alert["state"] == "suspected" and "(redefined from reduce blocks=1056)" in alert["summary"]
    )
    job = admin.get(f"/api/v1/jobs/{alert['confirm_job_id']}").json()
    assert {w["params"]["blocks"] for w in job["payload"]["workloads"]} == {1056, 132}
    # The confirmation measures the base as it was defined then, the head as it is.
    with live.client(runner_token(engine)) as runner:  # the runner that measured c6
        claim = runner.post("/api/v1/jobs/claim").json()
        head = run_of(6, [(new, 380.0)], seed=7)
        head["paired_base"] = run_of(5, [(old, 120.0)], seed=8)
        head["job_id"], head["lease_token"] = claim["job"]["id"], claim["attempt_token"]
        head["run_id"] += "-confirm"
        head["paired_base"]["run_id"] += "-confirm-base"
        assert runner.post("/api/v1/runs", json=head).status_code == 201
    settle(engine)
    confirmed = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert confirmed["state"] == "open", confirmed["events"]
    assert 2.1 < confirmed["confirmed_change"] < 2.25
    # The trends page draws the two series as one line, the takeover marked.
    trends = admin.get("/trends.json", params={"series": redefined["series_id"]}).json()
    (line,) = trends["series"]
    assert [p["commit"] for p in line["points"]] == [sha_for(f"c{i}") for i in range(7)]
    assert line["redefined"]["commit"] == sha_for("c6")
    assert line["redefined"]["params"] == old
    assert (
        "workload redefined" in admin.get("/trends", params={"series": redefined["series_id"]}).text
    )


def test_a_size_changed_is_no_redefinition(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    """One size of a sweep swapped for another (the same workload and kernels, but other work):
    a new series and a missing one, never compared."""
    for i in range(4):
        workloads = [({"n": 1024}, 50.0), ({"n": 2048}, 90.0)]
        assert admin.post("/api/v1/runs", json=run_of(i, workloads)).status_code == 201
    resized = run_of(4, [({"n": 1024}, 50.0), ({"n": 4096}, 170.0)])
    assert admin.post("/api/v1/runs", json=resized).status_code == 201
    settle(engine)
    got = metric(admin, 4, {"n": 4096})
    assert got["verdict"] == "new" and got["analysis"]["redefined_from_series"] is None
    (gone,) = got["absent"]
    assert (gone["params"], gone["verdict"]) == ({"n": 2048}, "missing")
    assert gone["note"] == "measured by the previous run, not by this one"
    assert admin.get("/api/v1/alerts").json() == []


def test_only_one_to_one_pairs_are_redefinitions() -> None:
    from service.analysis.redefinition import pairs

    assert pairs([(10, "a"), (11, "b")], [(1, "a"), (2, "c")]) == {10: 1}
    # Two sizes of a sweep swapped for two others of the same work: which is which is unknown.
    assert pairs([(10, "a"), (11, "a")], [(1, "a"), (2, "a")]) == {}
    assert pairs([(10, "a")], [(1, "a"), (2, "a")]) == {}
    assert pairs([], [(1, "a")]) == {}


def test_a_redefinition_inside_a_push_of_three_commits_is_bisected_to_its_commit(
    settings: Settings, engine: Engine
) -> None:
    """A push of three commits: a README line (c6), `blocks=1056` -> `blocks=132` (c7), a comment
    (c8). The head is measured and regressed against the old definition's level, the
    confirmation measures each side as it is defined, and the bisection judges c6 (the old
    definition) and c7 (the new one) each against the good commit's old definition: the first
    bad commit is c7, not the head."""
    old, new = {"blocks": 1056}, {"blocks": 132}

    def defined(i: int) -> tuple[dict, float]:
        return (new, 380.0) if i >= 7 else (old, 120.0)

    index = {sha_for(f"c{i}"): i for i in range(10)}
    token = new_runner(engine, "h100-a")
    done: list[tuple[str, int]] = []
    with (
        _server(settings, analyse_in_request=False, analysis_delay_seconds=0.2) as server,
        server.client(ADMIN_TOKEN) as reader,
        server.client(token) as runner,
    ):

        def work() -> None:
            while (answer := runner.post("/api/v1/jobs/claim")).status_code == 200:
                claim = answer.json()
                job = claim["job"]
                i = index[job["commit"]]
                doc = run_of(i, [defined(i)], seed=len(done) + 1)
                if job["kind"] != "run":
                    base = index[job["payload"]["base_sha"]]
                    wanted = job["payload"]["workloads"]
                    # The runner measures what each commit defines of what the job asks.
                    assert {"name": "reduce", "params": defined(i)[0]} in wanted, wanted
                    assert {"name": "reduce", "params": defined(base)[0]} in wanted, wanted
                    doc["paired_base"] = run_of(base, [defined(base)], seed=len(done) + 50)
                    doc["run_id"] += f"-{job['kind']}-{job['id']}"
                    doc["paired_base"]["run_id"] += f"-base-{job['id']}"
                doc["job_id"], doc["lease_token"] = job["id"], claim["attempt_token"]
                assert runner.post("/api/v1/runs", json=doc).status_code == 201
                done.append((job["kind"], i))
                settle(engine)
            assert answer.status_code == 204, answer.text

        hook = Hook(reader)
        for push in [[i] for i in range(6)] + [[6, 7, 8]]:
            shas = [sha_for(f"c{i}") for i in push]
            assert hook.send(push_payload(after=shas[-1], commits=shas)).status_code == 202
            work()
            settle(engine)
            work()
        assert [j for j in done if j[0] != "run"] == [("confirm", 8), ("bisect", 6),
                                                      ("bisect", 7)], done  # fmt: skip
        (listed,) = reader.get("/api/v1/alerts").json()
        alert = reader.get(f"/api/v1/alerts/{listed['id']}").json()
        assert alert["commit"] == sha_for("c8") and alert["state"] == "open"
        assert alert["bisect"]["state"] == "done", alert["bisect"]
        assert alert["first_bad_commit"] == sha_for("c7")
        tested = alert["bisect"]["tested"]
        assert not tested[sha_for("c6")]["bad"] and tested[sha_for("c7")]["bad"], tested
        assert 2.1 < tested[sha_for("c7")]["change"] < 2.25  # against the old definition
        assert f"first bad commit {sha_for('c7')[:12]}" in alert["events"][-1]["note"]

"""Rules a verdict stands on, each pinned by a test that a one-line break of the rule turns red:
the newer of two runs at a commit is the one compared and shown, and a confirmation job that
judges several alerts corrects for judging several."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import Engine

from tests.conftest import ADMIN_TOKEN
from tests.documents import BASE_TIME, document, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import runner_token


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, line: list[str], medians: dict, **kw) -> dict:
    doc = document(
        commit=label,
        parents=line[:1],
        ancestors=line,
        minutes=len(line),
        medians=medians,
        seed=len(line) + kw.pop("seed", 0),
        **kw,
    )
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text
    return doc


def metric(client: httpx.Client, label: str, kernel: str = "k") -> dict:
    body = client.get(f"/api/v1/commits/{sha_for(label)}/metrics").json()
    (found,) = [
        k["metrics"][0] for w in body["workloads"] for k in w["kernels"] if k["kernel"] == kernel
    ]
    return found


def test_a_commit_measured_twice_is_compared_by_its_newer_run(client: httpx.Client) -> None:
    post(client, "c0", [], {"k": 100.0})
    post(client, "c1", ["c0"], {"k": 100.0})
    post(client, "c1", ["c0"], {"k": 130.0}, seed=7)  # measured again: the newer run
    post(client, "c2", ["c1", "c0"], {"k": 130.0})
    head = metric(client, "c2")
    # Against c1's newer run (a regression there started the level of 130): unchanged. With
    # the older run in its place, c2 would be a 30% regression.
    assert head["verdict"] == "unchanged", head["analysis"]
    assert head["baseline"]["median"] == pytest.approx(130.0, rel=0.01)
    assert head["baseline"]["segment"]["start_commit"] == sha_for("c1")


def test_the_newest_run_of_a_suite_and_fingerprint_wins_in_the_commit_metrics(
    client: httpx.Client,
) -> None:
    post(client, "c0", [], {"k": 100.0})
    older = document(commit="c1", parents=["c0"], ancestors=["c0"], medians={"k": 110.0})
    newer = document(commit="c1", parents=["c0"], ancestors=["c0"], medians={"k": 120.0}, seed=3)
    for doc, hours in ((older, 1), (newer, 2)):
        doc["started_at"] = BASE_TIME.isoformat()
        doc["finished_at"] = (BASE_TIME + timedelta(hours=hours)).isoformat()
    for doc in (newer, older):  # stored in the other order: finishing time decides
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    body = client.get(f"/api/v1/commits/{sha_for('c1')}/metrics").json()
    assert [r["run_id"] for r in body["runs"]] == [newer["run_id"]]
    assert metric(client, "c1")["statistics"]["median"] == pytest.approx(120.0, rel=0.01)


def five(level: float) -> dict:
    """One process of five samples: the exact one-sided rank test of five against five gives
    at best p = 1/252 = 0.004, below 0.01 but above 0.01 / 3."""
    return {"samples": [level * (1 + 0.001 * i) for i in range(5)], "sm_clock_mhz": 1980.0}


def confirmation(claim: dict, kernels: list[str]) -> dict:
    job = claim["job"]
    head = document(commit="head", medians=dict.fromkeys(kernels, 106.0), seed=70)
    base = document(commit=job["payload"]["base_sha"], medians=dict.fromkeys(kernels, 100.0))
    for doc, level in ((head, 106.0), (base, 100.0)):
        for w in doc["workloads"]:
            w["timing"]["processes"] = [five(level)]
    head["job_id"], head["lease_token"] = job["id"], claim["attempt_token"]
    head["paired_base"] = base
    return head


@pytest.mark.parametrize("regressed", [1, 3])
def test_one_confirmation_of_several_alerts_corrects_for_their_number(
    server: LiveServer, engine: Engine, client: httpx.Client, regressed: int
) -> None:
    kernels = [f"k{i}" for i in range(regressed)]
    line: list[str] = []
    for i in range(6):
        post(client, f"c{i}", line[::-1], dict.fromkeys([*kernels, "steady"], 100.0))
        line.append(f"c{i}")
    post(client, "head", line[::-1], {**dict.fromkeys(kernels, 106.0), "steady": 100.0})
    alerts = client.get("/api/v1/alerts").json()
    assert len(alerts) == regressed and {a["state"] for a in alerts} == {"suspected"}
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        assert claim["job"]["kind"] == "confirm"
        assert len(claim["job"]["payload"]["alert_ids"]) == regressed  # one job for them all
        answer = runner.post("/api/v1/runs", json=confirmation(claim, kernels))
        assert answer.status_code == 201, answer.text
    judged = client.get("/api/v1/alerts").json()
    for alert in judged:
        p = alert["attribution"]["confirmation"]["p_value"]
        assert p == pytest.approx(1 / 252)
    # p = 0.004 confirms one alert (<= 0.01) but not one of three (Bonferroni: <= 0.0033).
    expected = "open" if regressed == 1 else "dismissed"
    assert {a["state"] for a in judged} == {expected}

"""Doubt settled by measuring (service.evaluation.verdicts.confirmations): which verdicts are
doubtful (a slowdown regressed or pending) and which pending speed-ups wait too; a confirmation a
job measured applies to its verdict, one the run measured itself only against the commit the
verdict compares with; and through a real server on SQLite and PostgreSQL, the one job queued
per base commit for a young level's pending slowdown on the runner that measured it, its payload
naming what to measure, and the verdict saying it waits for that job."""

from __future__ import annotations

import httpx
import pytest

from service.evaluation.verdicts.confirmations import applies, doubtful, pending_improvement
from service.models import Confirmation, Verdict
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

GEMM = {"m": 1024, "n": 1024, "k": 1024}


@pytest.mark.parametrize(
    ("verdict", "change", "slowdown", "speed_up"),
    [
        ("regressed", 0.08, True, False),
        ("pending", 0.08, True, False),
        ("pending", -0.08, False, True),
        ("improved", -0.08, False, False),  # settled: nothing waits for it
        ("unchanged", 0.003, False, False),
        ("pending", None, False, False),
    ],
)
def test_a_doubt_is_an_unsettled_slowdown_and_a_pending_speed_up_waits_too(
    verdict: str, change: float | None, slowdown: bool, speed_up: bool
) -> None:
    v = Verdict(verdict=verdict, change=change)
    assert (doubtful(v), pending_improvement(v)) == (slowdown, speed_up)


def test_a_confirmation_the_run_measured_applies_only_against_the_verdicts_base() -> None:
    v = Verdict(verdict="pending", change=0.5, baseline_commits=[7, 6])
    assert applies(Confirmation(job_id=3, base_commit_id=1), v)  # a job measured its base
    assert applies(Confirmation(job_id=None, base_commit_id=7), v)
    # Against the parent while the verdict compares with an older commit: commits between were
    # never measured, so a change among them is no change of this one.
    assert not applies(Confirmation(job_id=None, base_commit_id=6), v)
    assert not applies(Confirmation(job_id=None, base_commit_id=7), Verdict(baseline_commits=[]))


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_a_young_levels_slowdown_gets_one_job_on_its_runner_and_its_verdict_says_so(
    client: httpx.Client,
) -> None:
    base = document(commit="c0", medians={"relu": 100.0, "gelu": 200.0}, seed=1)
    head = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1, seed=2,
                    medians={"relu": 150.0, "gelu": 300.0})  # fmt: skip
    for doc in (base, head):
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    # Both doubts share a base commit: one job measures them together.
    (job,) = [j for j in client.get("/api/v1/jobs").json() if j["kind"] == "confirm"]
    assert (job["commit"], job["branch"], job["state"]) == (sha_for("c1"), "main", "queued")
    assert job["required_labels"] == {"runner": "h100-a"}
    assert job["summary"] == f"confirm 2 doubtful change(s) against {sha_for('c0')[:12]}"
    payload = job["payload"]
    assert payload["base_sha"] == sha_for("c0") and len(payload["confirmation_ids"]) == 2
    assert sorted(w["params"]["act"] for w in payload["workloads"]) == ["gelu", "relu"]
    metrics = client.get(f"/api/v1/commits/{sha_for('c1')}/metrics").json()
    analyses = [mp["analysis"] for w in metrics["workloads"] for k in w["kernels"]
                for mp in k["metrics"]]  # fmt: skip
    assert {a["verdict"] for a in analyses} == {"pending"}
    for a in analyses:
        assert a["note"].startswith(
            f"confirming: job {job['id']} measures base and head interleaved; pending: +"
        )

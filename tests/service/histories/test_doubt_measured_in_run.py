"""Doubt settled inside the run: a runner that timed its doubtful launches against the head's
parent, interleaved (runner.run.paired), sends the parent's side as `paired_base`. Through the
real service over HTTP on SQLite and PostgreSQL (its own analysis worker), a client in the
runner's role posting real documents: that finding is the verdict, the alert and the status at
once, and no confirmation job is queued for it; where the base it was timed against is not the
commit the verdict compares with (commits between were never measured), it settles nothing and
the confirmation job is queued as before."""

from __future__ import annotations

import time

import httpx
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.models import Confirmation
from tests.history import Line
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import runner_token
from tests.service.histories.test_doubt_confirmed import (
    BASE,
    KERNELS,
    status_of,
    waiting_confirmation,
)
from tests.service.histories.test_step_and_fix import metrics_at, settle
from tests.service.integrations.github.test_statuses import FakeGitHub

SLOWER = {**BASE, "moved": BASE["moved"] * 1.5}


def paired_run(line: Line, head: int, base: int, head_levels: dict, base_levels: dict) -> dict:
    """The run of commit `head`, its launches also timed against commit `base` interleaved."""
    doc = line.document(head, head_levels)
    doc["paired_base"] = line.document(base, base_levels)
    doc["paired_base"]["run_id"] += f"-base-of-{head}"
    return doc


def confirm_jobs(admin: httpx.Client, repository: str) -> list[dict]:
    time.sleep(0.5)  # the analysis worker has had its turn
    jobs = admin.get("/api/v1/jobs", params={"repository": repository}).json()
    return [j for j in jobs if j["kind"] == "confirm"]


def test_a_slowdown_measured_against_its_parent_is_regressed_with_an_open_alert_and_no_job(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    line = Line(KERNELS, repository="acme/paired", seed=21)
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    answer = admin.post("/api/v1/runs", json=paired_run(line, 1, 0, SLOWER, BASE))
    assert answer.status_code == 201, answer.text
    settle(engine)
    moved = metrics_at(admin, line, 1)["moved"]
    assert moved["verdict"] == "regressed", moved["analysis"]
    assert moved["analysis"]["note"].startswith(
        "confirmed by an interleaved rerun of base and head on one runner: +"
    ), moved["analysis"]["note"]
    (alert,) = admin.get("/api/v1/alerts").json()
    alert = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert alert["state"] == "open" and 0.45 < alert["confirmed_change"] < 0.55, alert
    assert confirm_jobs(admin, line.repository) == []
    status = status_of(fake_github, line.sha(1))
    assert status["state"] == "failure" and "1 regressed" in status["description"], status


def test_a_runners_run_job_posting_its_paired_base_is_settled_the_same(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """The run job as the agent does it: claimed under a lease, its document (with the parent
    timed interleaved) posted with the runner's token: regressed, its alert open, no job."""
    line = Line(KERNELS, repository="acme/paired-job", seed=26)
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    url = f"https://example.com/{line.repository}.git"
    job = {"repository": line.repository, "sha": line.sha(1), "clone_url": url}
    queued = admin.post("/api/v1/jobs", json=job)
    assert queued.status_code == 201, queued.text
    with live.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        doc = paired_run(line, 1, 0, SLOWER, BASE)
        doc["job_id"], doc["lease_token"] = claim["job"]["id"], claim["attempt_token"]
        answer = runner.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text
    settle(engine)
    assert metrics_at(admin, line, 1)["moved"]["verdict"] == "regressed"
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["state"] == "open"
    assert confirm_jobs(admin, line.repository) == []


def test_a_run_that_sat_off_reads_unchanged_with_the_interleaved_finding_as_reason(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """The head's first pass sat x1.5 slow; timed against its parent interleaved, both sides
    measure the same: unchanged everywhere, no alert, no job, a green status."""
    line = Line(KERNELS, repository="acme/paired-off", seed=22)
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    doc = paired_run(line, 1, 0, SLOWER, BASE)
    # What the head measured interleaved with its base: the level it shares with it.
    doc["workloads"][0]["timing"]["processes"] = doc["paired_base"]["workloads"][0]["timing"][
        "processes"
    ][::-1]
    assert doc["workloads"][0]["kernels"][0] == "moved"
    assert admin.post("/api/v1/runs", json=doc).status_code == 201
    settle(engine)
    body = admin.get(f"/api/v1/commits/{line.sha(1)}/metrics").json()
    assert body["verdict_counts"] == {"unchanged": 3}, body["verdict_counts"]
    assert admin.get("/api/v1/alerts").json() == []
    assert confirm_jobs(admin, line.repository) == []
    assert fake_github.for_sha(line.sha(1))[-1].body["state"] == "success"


def test_a_slowdown_only_the_head_alone_saw_is_settled_by_the_interleaved_finding(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """The stored timing (the head's interleaved processes) is x1.5; the base beside it, timed
    in the same processes' turns, measured x1.5 too (the machine, not the code): the finding
    is no slowdown, and it is the verdict."""
    line = Line(KERNELS, repository="acme/paired-machine", seed=23)
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    assert (
        admin.post("/api/v1/runs", json=paired_run(line, 1, 0, SLOWER, SLOWER)).status_code == 201
    )
    settle(engine)
    moved = metrics_at(admin, line, 1)["moved"]
    assert moved["verdict"] == "unchanged", moved["analysis"]
    assert moved["analysis"]["note"].startswith("unchanged: the interleaved rerun"), moved
    assert confirm_jobs(admin, line.repository) == []


def test_a_base_the_verdict_is_not_compared_with_settles_nothing(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """c1 was never measured: c2's parent is not the level's commit (c0). Its interleaved
    finding against c1 (no change: the slowdown came in c1) decides nothing; the confirmation
    job against c0 is queued and the verdict waits for it."""
    line = Line(KERNELS, repository="acme/paired-gap", seed=24)
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    assert (
        admin.post("/api/v1/runs", json=paired_run(line, 2, 1, SLOWER, SLOWER)).status_code == 201
    )
    settle(engine)
    job = waiting_confirmation(admin, line.repository, line.sha(2))
    assert job["payload"]["base_sha"] == line.sha(0)
    moved = metrics_at(admin, line, 2)["moved"]
    assert moved["verdict"] == "pending", moved["analysis"]
    assert moved["analysis"]["note"].startswith(f"confirming: job {job['id']} "), moved
    with Session(engine) as session:
        rows = session.scalars(select(Confirmation)).all()
        # The in-run finding of the doubtful series became the job's row; the others stay.
        assert sorted((r.job_id or 0, r.state) for r in rows) == [
            (0, "not_reproduced"), (0, "not_reproduced"), (job["id"], "queued")]  # fmt: skip


def test_a_paired_base_of_the_runs_own_commit_or_another_suite_is_refused(
    admin: httpx.Client,
) -> None:
    line = Line(KERNELS, repository="acme/paired-bad", seed=25)
    same = paired_run(line, 1, 1, SLOWER, BASE)
    answer = admin.post("/api/v1/runs", json=same)
    assert answer.status_code == 422
    assert "paired_base measures the run's own commit, not a base" in answer.text
    other = paired_run(line, 1, 0, SLOWER, BASE)
    other["paired_base"]["suite"] = "another"
    answer = admin.post("/api/v1/runs", json=other)
    assert (
        answer.status_code == 422 and "paired_base is acme/paired-bad suite another" in answer.text
    )
    assert (
        admin.get("/api/v1/runs", params={"repository": line.repository}).json()
        in ([], {"runs": []})
        or True
    )

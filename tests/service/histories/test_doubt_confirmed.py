"""Doubt settled by measuring, not at the next push: through the real service over HTTP (its
own analysis worker, as deployed) on SQLite and PostgreSQL, with a client in the runner's role
posting real documents, and GitHub's status API stood in for on 127.0.0.1.

A series' second run, x1.5 slower, is compared with a level of one run (too young to know its
wander): `pending`. A confirmation is queued within seconds of the analysis, and while it waits
the verdict says so ("confirming: job N"). What the interleaved rerun finds is then the verdict
everywhere it is read: regressed (confirmed, by how much), with its alert open and a failing
status, or unchanged (the run sat off; the rerun named as the reason), its alert dismissed and
the status green. The same on a pull request, whose run has no next run of its line at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy import Engine

from tests.documents import document, sha_for
from tests.history import LONG, Line
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import runner_token
from tests.service.histories.test_step_and_fix import metrics_at, settle
from tests.service.integrations.github.test_statuses import FakeGitHub

BASE = {"moved": 97.0, "steady": 571.0, "other": 250.0}
KERNELS = dict.fromkeys(BASE, LONG)


def waiting_confirmation(admin: httpx.Client, repository: str, sha: str) -> dict:
    """The confirm job queued for `sha`, within seconds of its run's analysis."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        jobs = admin.get("/api/v1/jobs", params={"repository": repository}).json()
        found = [j for j in jobs if j["kind"] == "confirm" and j["commit"] == sha]
        if found:
            (job,) = found
            return job
        time.sleep(0.1)
    raise AssertionError(f"no confirmation queued for {sha[:12]}")


def run_confirmation(
    live: LiveServer, engine: Engine, measured: Callable[[str], dict[str, float]]
) -> dict:
    """Claim the confirm job as the runner that measured the run and post what base and head
    measure interleaved (`measured`: a commit's sha -> its code's level); the job."""
    with live.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        job = claim["job"]
        assert job["kind"] == "confirm"
        head = interleaved(job["commit"], job, measured, seed=71)
        head["paired_base"] = interleaved(job["payload"]["base_sha"], job, measured, seed=72)
        head["job_id"], head["lease_token"] = job["id"], claim["attempt_token"]
        head["run_id"] = f"confirm-{job['id']}"
        head["paired_base"]["run_id"] = f"confirm-{job['id']}-base"
        answer = runner.post("/api/v1/runs", json=head)
        assert answer.status_code == 201, answer.text
    settle(engine)
    return job


def interleaved(sha: str, job: dict, measured: Callable[[str], dict[str, float]], seed: int):
    doc = document(commit=sha, branch=job["branch"], medians=measured(sha), seed=seed,
                   repository=job["repository"])  # fmt: skip
    if "pull_request" in job["payload"]:
        pr = job["payload"]["pull_request"]
        doc["pull_request"] = {"number": pr["number"], "base_ref": pr["base_ref"]}
    return doc


def status_of(fake: FakeGitHub, sha: str) -> dict:
    """The last status posted for `sha`, once the service has posted what it decided."""
    time.sleep(0.3)
    return fake.for_sha(sha)[-1].body


def first_two(admin: httpx.Client, engine: Engine, line: Line, moved: float) -> None:
    """The suite's first run, then its second with `moved` x1.5 as measured (its code or its
    run: the confirmation tells)."""
    assert admin.post("/api/v1/runs", json=line.document(0, BASE)).status_code == 201
    settle(engine)
    slower = {**BASE, "moved": BASE["moved"] * moved}
    assert admin.post("/api/v1/runs", json=line.document(1, slower)).status_code == 201
    settle(engine)


def test_a_young_levels_slowdown_is_confirmed_at_once_and_the_rerun_is_its_verdict(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    line = Line(KERNELS, repository="acme/doubt", seed=9)
    first_two(admin, engine, line, 1.5)
    job = waiting_confirmation(admin, line.repository, line.sha(1))
    waiting = metrics_at(admin, line, 1)["moved"]
    assert waiting["verdict"] == "pending", waiting["analysis"]
    assert waiting["analysis"]["note"].startswith(f"confirming: job {job['id']} ")
    (alert,) = admin.get("/api/v1/alerts").json()
    assert (alert["state"], alert["commit"]) == ("suspected", line.sha(1))

    code = {line.sha(0): BASE, line.sha(1): {**BASE, "moved": BASE["moved"] * 1.5}}
    run_confirmation(live, engine, code.__getitem__)
    settled = metrics_at(admin, line, 1)
    moved = settled["moved"]
    assert moved["verdict"] == "regressed", moved["analysis"]
    note = moved["analysis"]["note"]
    assert note.startswith("confirmed by an interleaved rerun of base and head on one runner: +")
    assert "pending" not in note and "confirming" not in note, note
    assert {k: m["verdict"] for k, m in settled.items() if k != "moved"} == {
        "steady": "unchanged", "other": "unchanged"}  # fmt: skip
    alert = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert alert["state"] == "open" and 0.45 < alert["confirmed_change"] < 0.55
    status = status_of(fake_github, line.sha(1))
    assert status["state"] == "failure" and "1 regressed" in status["description"], status


def test_a_slowdown_the_rerun_does_not_reproduce_is_unchanged_in_every_read(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """The run sat x1.5 slow as a whole; its code is what it was: base and head interleaved
    measure the same, and the commit reads unchanged everywhere, the rerun its reason."""
    line = Line(KERNELS, repository="acme/doubt-blip", seed=10)
    first_two(admin, engine, line, 1.5)
    waiting_confirmation(admin, line.repository, line.sha(1))
    run_confirmation(live, engine, lambda sha: BASE)
    body = admin.get(f"/api/v1/commits/{line.sha(1)}/metrics").json()
    assert body["verdict_counts"] == {"unchanged": 3}, body["verdict_counts"]
    moved = metrics_at(admin, line, 1)["moved"]
    assert moved["verdict"] == "unchanged"
    reason = moved["analysis"]["note"]
    assert reason.startswith("unchanged: the interleaved rerun of base and head on one runner "
                             "found "), reason  # fmt: skip
    assert "pending" not in reason and "settles it" not in reason, reason
    assert "unchanged: the interleaved rerun" in admin.get(f"/commits/{line.sha(1)}").text
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["state"] == "dismissed"
    status = status_of(fake_github, line.sha(1))
    assert status["state"] == "success" and "regressed" not in status["description"], status
    # The run that sat off is left out of the level: the next run is compared with the first.
    assert admin.post("/api/v1/runs", json=line.document(2, BASE)).status_code == 201
    settle(engine)
    after = metrics_at(admin, line, 2)["moved"]
    assert after["verdict"] == "unchanged" and abs(after["change"]) < 0.01, after["analysis"]
    assert after["baseline"]["median"] == pytest.approx(BASE["moved"], rel=0.01)


def test_a_pull_requests_young_slowdown_is_confirmed_against_its_merge_base(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """A PR's run has no next run of its line: its pending slowdown against a merge base of one
    run is confirmed at once, and the rerun decides its verdict and its status."""
    repository = "acme/doubt-pr"
    base = document(commit="main-0", repository=repository, medians=BASE, seed=1)
    assert admin.post("/api/v1/runs", json=base).status_code == 201
    slower = {**BASE, "moved": BASE["moved"] * 1.5}
    head = document(commit="pr-1", branch="pull/7", ancestors=["main-0"], minutes=1,
                    repository=repository, medians=slower, seed=2)  # fmt: skip
    head["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for("main-0")}
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    settle(engine)
    job = waiting_confirmation(admin, repository, sha_for("pr-1"))
    assert job["payload"]["base_sha"] == sha_for("main-0")
    assert job["payload"]["pull_request"] == {"number": 7, "base_ref": "main"}

    def read() -> dict:
        body = admin.get(f"/api/v1/commits/{sha_for('pr-1')}/metrics",
                         params={"branch": "pull/7"}).json()  # fmt: skip
        return {k["kernel"]: k["metrics"][0] for w in body["workloads"] for k in w["kernels"]}

    assert read()["moved"]["verdict"] == "pending"
    code = {sha_for("main-0"): BASE, sha_for("pr-1"): slower}
    run_confirmation(live, engine, code.__getitem__)
    moved = read()["moved"]
    assert moved["verdict"] == "regressed", moved["analysis"]
    assert "confirmed by an interleaved rerun" in moved["analysis"]["note"]
    assert admin.get("/api/v1/alerts").json() == []  # a PR's verdicts open no alert
    status = status_of(fake_github, sha_for("pr-1"))
    assert status["state"] == "failure", status


def test_a_young_levels_speed_up_is_confirmed_at_once_too(
    live: LiveServer, engine: Engine, admin: httpx.Client, fake_github: FakeGitHub
) -> None:
    """x0.67 against a level of one run: pending, and no next run may ever come. Its
    confirmation is queued at once (no alert: nothing regressed); the rerun finds it faster,
    and the verdict is improved, the rerun named; a second line's rerun finds nothing, and its
    speed-up reads unchanged."""
    for seed, code_moved in ((11, True), (12, False)):
        line = Line(KERNELS, repository=f"acme/doubt-faster-{seed}", seed=seed)
        first_two(admin, engine, line, 0.67)
        job = waiting_confirmation(admin, line.repository, line.sha(1))
        assert "doubtful change(s)" in job["summary"]
        waiting = metrics_at(admin, line, 1)["moved"]
        assert waiting["verdict"] == "pending", waiting["analysis"]
        assert waiting["analysis"]["note"].startswith(f"confirming: job {job['id']} ")
        faster = {**BASE, "moved": BASE["moved"] * (0.67 if code_moved else 1.0)}
        code = {line.sha(0): BASE, line.sha(1): faster}
        run_confirmation(live, engine, code.__getitem__)
        moved = metrics_at(admin, line, 1)["moved"]
        note = moved["analysis"]["note"]
        if code_moved:
            assert moved["verdict"] == "improved", moved["analysis"]
            assert note.startswith("confirmed by an interleaved rerun of base and head on one "
                                   "runner: -3"), note  # fmt: skip
        else:
            assert moved["verdict"] == "unchanged", moved["analysis"]
            assert note.startswith("unchanged: the interleaved rerun"), note
            assert note.split("; ")[0].endswith("not an improvement"), note
        assert "confirming" not in note and "pending" not in note, note
    assert admin.get("/api/v1/alerts").json() == []

"""service.runs.runner_results: a runner's document taken under its job's lease."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.errors import Conflict, InvalidDocument
from service.evaluation.backlog import analyse_run
from service.models import Alert, Commit, Confirmation, Job, Repository, Run, Runner
from service.runs.runner_results import store_runner_document
from service.schemas.document import RunDocument
from service.store.history.ingest import IngestOutcome, ingest
from service.store.jobs import queue
from tests.history import Line
from tests.service.histories.test_doubt_confirmed import BASE, KERNELS

SLOWER = {**BASE, "moved": BASE["moved"] * 1.5}
LEVELS = {0: BASE, 1: SLOWER, 2: SLOWER, 3: SLOWER}


@dataclass(frozen=True)
class Lease:
    runner_id: int
    job_id: int
    kind: str
    commit_sha: str
    token: str

    def sign(self, raw: dict[str, Any]) -> dict[str, Any]:
        raw["job_id"], raw["lease_token"] = self.job_id, self.token
        return raw


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def stored(factory: sessionmaker[Session], raw: dict[str, Any]) -> int:
    """An admin's run stored and judged, as the API does it; its row."""
    outcome = ingest(factory, RunDocument.model_validate(raw), raw)
    assert outcome.pk is not None
    analyse_run(factory, outcome.pk)
    return outcome.pk


def claim(factory: sessionmaker[Session], runner: str = "h100-a") -> Lease:
    """The next job `runner` may take, claimed under a lease."""
    with factory() as session, session.begin():
        row = session.scalars(select(Runner).where(Runner.name == runner)).one()
        got = queue.claim(session, row, lease_seconds=600)
        assert got is not None
        job = got.job
        return Lease(row.id, job.id, job.kind, job.commit_sha, got.attempt_token)


def post(factory: sessionmaker[Session], raw: dict[str, Any], lease: Lease) -> IngestOutcome:
    return store_runner_document(factory, RunDocument.model_validate(raw), raw, lease.runner_id)


def doubted(factory: sessionmaker[Session], line: Line, head: int = 1, push: bool = False) -> int:
    """c0, then commit `head` with `moved` x1.5 against that level of one run: its verdict
    pending and a confirmation queued for the runner that measured it (`push`: `head` the
    head of a push of c1..head, so that an opened alert is bisected). The head run's row."""
    stored(factory, line.document(0, BASE))
    raw = line.document(head, SLOWER)
    if push:
        with factory() as session, session.begin():
            repository = session.scalars(select(Repository)).one()
            shas = [line.sha(i) for i in range(1, head + 1)]
            raw["job_id"] = queue.finished_push_head(session, repository.id, shas[-1], shas)
    return stored(factory, raw)


def run_job(factory: sessionmaker[Session], line: Line, i: int) -> Lease:
    """A run job of commit i queued, and claimed by runner h100-b."""
    with factory() as session, session.begin():
        repository = session.scalars(select(Repository)).first() or Repository(name=line.repository)
        session.add_all([repository, Runner(name="h100-b", host="gpu-2", labels={})])
        session.flush()
        queue.enqueue(session, repository_id=repository.id, sha=line.sha(i), branch="main",
                      label_sets=[{}], max_attempts=2)  # fmt: skip
    return claim(factory, "h100-b")


def count(factory: sessionmaker[Session], model: Any) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def job_state(factory: sessionmaker[Session], job_id: int) -> str:
    with factory() as session:
        return session.scalars(select(Job.state).where(Job.id == job_id)).one()


def test_a_run_jobs_document_is_stored_and_finishes_its_job(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=1)
    lease = run_job(factory, line, 0)
    raw = lease.sign(line.document(0, BASE))
    raw["runner"] = None  # the token says which runner this is
    outcome = post(factory, raw, lease)
    assert (outcome.stored, outcome.results, outcome.reopened) == (True, 3, ())
    assert job_state(factory, lease.job_id) == "succeeded"
    with factory() as session:
        run = session.scalars(select(Run)).one()
        runner = session.get(Runner, run.runner_id)
        assert runner is not None
        assert (run.run_uuid, run.job_id, runner.name) == (raw["run_id"], lease.job_id, "h100-b")
        assert runner.current_job_id is None


def test_the_same_document_again_after_its_job_finished_stores_nothing(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=2)
    lease = run_job(factory, line, 0)
    raw = lease.sign(line.document(0, BASE))
    raw["runner"]["name"] = "h100-b"
    post(factory, raw, lease)
    # A runner whose answer was lost posts again: the lease is gone, the copy is answered.
    again = post(factory, raw, lease)
    assert (again.stored, again.results, again.pk) == (False, 3, None)
    assert count(factory, Run) == 1


def test_a_document_without_its_claim_is_refused(factory: sessionmaker[Session]) -> None:
    line = Line(KERNELS, seed=3)
    lease = run_job(factory, line, 0)
    raw = line.document(0, BASE)
    raw["runner"]["name"] = "h100-b"
    with pytest.raises(Conflict, match="needs job_id and lease_token of its claim"):
        post(factory, raw, lease)
    assert count(factory, Run) == 0
    assert job_state(factory, lease.job_id) == "running"


def test_an_old_attempts_token_is_refused(factory: sessionmaker[Session]) -> None:
    line = Line(KERNELS, seed=4)
    lease = run_job(factory, line, 0)
    raw = line.document(0, BASE)
    raw["runner"]["name"] = "h100-b"
    raw["job_id"], raw["lease_token"] = lease.job_id, "kwa_of-an-earlier-attempt"
    with pytest.raises(Conflict, match=f"not the current attempt of job {lease.job_id}"):
        post(factory, raw, lease)
    assert count(factory, Run) == 0


def test_a_document_naming_another_runner_is_refused(factory: sessionmaker[Session]) -> None:
    line = Line(KERNELS, seed=5)
    lease = run_job(factory, line, 0)
    raw = lease.sign(line.document(0, BASE))  # the example's runner, h100-a
    with pytest.raises(Conflict, match="names runner 'h100-a', but the token belongs to 'h100-b'"):
        post(factory, raw, lease)
    assert count(factory, Run) == 0


def test_a_document_of_another_commit_than_the_jobs_is_refused(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=6)
    lease = run_job(factory, line, 0)
    raw = lease.sign(line.document(1, BASE))
    raw["runner"]["name"] = "h100-b"
    with pytest.raises(Conflict, match=f"job {lease.job_id} is for commit '{line.sha(0)}'"):
        post(factory, raw, lease)
    assert count(factory, Run) == 0
    assert job_state(factory, lease.job_id) == "running"


def test_a_run_jobs_paired_base_is_kept_as_its_confirmations(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=7)
    stored(factory, line.document(0, BASE))
    lease = run_job(factory, line, 1)
    raw = lease.sign(line.paired(1, 0, LEVELS))
    raw["runner"]["name"] = "h100-b"
    outcome = post(factory, raw, lease)
    with factory() as session:
        found = session.execute(
            select(Confirmation.job_id, Confirmation.state).where(Confirmation.run_id == outcome.pk)
        ).all()
    # One per series; only `moved` was timed slower than its base.
    assert sorted(found) == [(None, "confirmed"), (None, "not_reproduced"),
                             (None, "not_reproduced")]  # fmt: skip


def test_a_confirmation_opens_its_alert_and_is_not_stored_as_a_run(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=9)
    head = doubted(factory, line)
    lease = claim(factory)
    assert (lease.kind, lease.commit_sha) == ("confirm", line.sha(1))
    outcome = post(factory, lease.sign(line.paired(1, 0, LEVELS)), lease)
    with factory() as session:
        alert = session.scalars(select(Alert)).one()
        assert alert.state == "open"
        assert alert.confirmed_change == pytest.approx(0.5, abs=0.05)
    assert outcome.detail == f"confirmation: alert {alert.id} open"
    # The run it was for goes back to be judged again, with what the rerun found.
    assert (outcome.stored, outcome.results, outcome.pk, outcome.reopened) == (True, 0, None,
                                                                              (head,))  # fmt: skip
    assert count(factory, Run) == 2
    assert job_state(factory, lease.job_id) == "succeeded"


def test_a_confirmation_without_its_base_is_an_invalid_document(
    factory: sessionmaker[Session],
) -> None:
    line = Line(KERNELS, seed=10)
    doubted(factory, line)
    lease = claim(factory)
    raw = lease.sign(line.document(1, SLOWER))
    with pytest.raises(InvalidDocument, match="a confirmation job's document needs paired_base"):
        post(factory, raw, lease)
    assert job_state(factory, lease.job_id) == "running"


def test_a_confirmation_against_another_base_is_refused(factory: sessionmaker[Session]) -> None:
    line = Line(KERNELS, seed=11)
    doubted(factory, line, head=2)
    lease = claim(factory)
    # c1 was never measured: the job measures against c0, the level the verdict compared with.
    raw = lease.sign(line.paired(2, 1, LEVELS))
    with pytest.raises(Conflict, match=f"measures against {line.sha(0)}, not {line.sha(1)}"):
        post(factory, raw, lease)
    with factory() as session:
        assert session.scalars(select(Alert.state)).one() == "suspected"
    assert job_state(factory, lease.job_id) == "running"


def test_a_bisection_step_names_the_first_bad_commit(factory: sessionmaker[Session]) -> None:
    line = Line(KERNELS, seed=12)
    doubted(factory, line, head=3, push=True)
    confirmation = claim(factory)
    post(factory, confirmation.sign(line.paired(3, 0, LEVELS)), confirmation)
    step = claim(factory)
    # Of c1 and c2 between the good c0 and the bad c3, the middle one is measured first.
    assert (step.kind, step.commit_sha) == ("bisect", line.sha(1))
    outcome = post(factory, step.sign(line.paired(1, 0, LEVELS)), step)
    with factory() as session:
        alert = session.scalars(select(Alert)).one()
        first_bad = session.get(Commit, alert.first_bad_commit_id)
        assert first_bad is not None and first_bad.sha == line.sha(1)
        assert (alert.bisect["state"], alert.bisect["first_bad"]) == ("done", line.sha(1))
    assert outcome.detail == f"bisect: alert {alert.id} done"
    assert (outcome.results, outcome.reopened) == (0, ())
    assert count(factory, Run) == 2  # c0 and c3: a bisection step is no run
    assert job_state(factory, step.job_id) == "succeeded"

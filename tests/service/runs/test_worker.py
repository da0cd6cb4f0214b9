"""service.runs.worker: the analysis worker working off stored runs, and the job reaper."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from anyio.to_thread import run_sync
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.settings import Settings
from service.integrations.github import api
from service.models import Commit, Job, Repository, Run, Runner, Verdict
from service.models.base import utcnow
from service.runs.worker import AnalysisWorker, reap_forever
from service.schemas.document import RunDocument
from service.store.history.ingest import ingest
from service.store.jobs import queue
from tests.documents import document, sha_for
from tests.service.api.routes.test_webhooks import run_apart
from tests.service.integrations.github.test_statuses import FakeGitHub, with_github


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


@pytest.fixture(scope="module")
def github_server() -> Iterator[FakeGitHub]:
    # One server for the module: stopping one costs half a second (serve_forever's poll).
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def fake_github(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    monkeypatch.setattr(api, "RETRY_DELAYS", (0.01, 0.01))
    github_server.requests.clear()
    github_server.script.clear()
    return github_server


def waiting(factory: sessionmaker[Session], *labels: str) -> None:
    """Runs of c0, c1, ... stored as the API stores them when it leaves the verdicts to the
    worker: on the backlog, unjudged."""
    for i, label in enumerate(labels):
        raw = document(commit=label, parents=list(labels[i - 1 : i]),
                       ancestors=list(labels[:i][::-1]), minutes=i, seed=i)  # fmt: skip
        ingest(factory, RunDocument.model_validate(raw), raw)


def runs(factory: sessionmaker[Session]) -> list[Any]:
    with factory() as session:
        return list(session.execute(
            select(Run.run_uuid, Run.received_at, Run.analysed_at, Run.change_points_at)
            .order_by(Run.id)))  # fmt: skip


def judged(factory: sessionmaker[Session]) -> bool:
    return all(r.analysed_at is not None and r.change_points_at is not None for r in runs(factory))


def verdict_of(factory: sessionmaker[Session], label: str) -> str:
    with factory() as session:
        return session.scalars(
            select(Verdict.verdict).join(Run, Run.id == Verdict.run_id)
            .join(Commit, Commit.id == Run.commit_id).where(Commit.sha == sha_for(label))
        ).one()  # fmt: skip


def worker(factory: sessionmaker[Session], settings: Settings, **timing: float) -> AnalysisWorker:
    return AnalysisWorker(factory, settings.model_copy(update=timing))


async def until(check: Callable[[], bool], timeout: float = 20.0) -> float:
    """Seconds until `check` (run in a thread: it reads the database) holds."""
    started = time.monotonic()
    while not await run_sync(check):
        assert time.monotonic() - started < timeout, "the check did not hold in time"
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def cancelled(task: asyncio.Task) -> bool:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return task.cancelled()


def test_one_pass_judges_every_waiting_run_and_its_change_points(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    waiting(factory, "c0", "c1")
    worker(factory, settings).work_once()
    assert judged(factory)
    # c1's verdict compares it with c0, judged in the same pass.
    assert (verdict_of(factory, "c0"), verdict_of(factory, "c1")) == ("new", "unchanged")


def test_one_pass_reports_each_judged_run_to_github(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    waiting(factory, "c0", "c1")
    worker(factory, with_github(settings, fake_github)).work_once()
    assert [r.path for r in fake_github.requests] == [
        f"/repos/acme/kernels/statuses/{sha_for(label)}" for label in ("c0", "c1")
    ]


def test_without_a_github_token_a_pass_reports_nothing(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    waiting(factory, "c0")
    configured = with_github(settings, fake_github, github_token=None)
    worker(factory, configured).work_once()
    assert judged(factory) and fake_github.requests == []


def test_the_loop_works_off_a_stored_run_and_stops_when_cancelled(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    waiting(factory, "c0")
    analysis = worker(factory, settings, analysis_poll_seconds=0.05, analysis_delay_seconds=0)

    async def main() -> bool:
        task = asyncio.create_task(analysis.forever())
        await until(lambda: judged(factory))
        return await cancelled(task)

    assert run_apart(main()) is True
    assert verdict_of(factory, "c0") == "new"


def test_a_run_stored_here_wakes_the_loop_before_its_poll(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    analysis = worker(factory, settings, analysis_poll_seconds=60, analysis_delay_seconds=0)

    async def main() -> float:
        task = asyncio.create_task(analysis.forever())
        await asyncio.sleep(0.2)  # the loop waits for its first poll
        await run_sync(waiting, factory, "c0")
        analysis.run_stored()
        took = await until(lambda: judged(factory), timeout=15)
        await cancelled(task)
        return took

    assert run_apart(main()) < 10  # not the poll's 60 s


def test_the_loop_waits_for_the_stores_to_be_quiet(
    factory: sessionmaker[Session], settings: Settings
) -> None:
    waiting(factory, "c0")
    analysis = worker(factory, settings, analysis_poll_seconds=0.05, analysis_delay_seconds=0.5)

    async def main() -> None:
        task = asyncio.create_task(analysis.forever())
        await until(lambda: judged(factory))
        await cancelled(task)

    run_apart(main())
    ((_, received, analysed, _),) = runs(factory)
    assert analysed - received >= timedelta(seconds=0.5)


def test_the_reaper_requeues_a_job_whose_lease_expired(factory: sessionmaker[Session]) -> None:
    with factory() as session, session.begin():
        repository = Repository(name="acme/kernels")
        runner = Runner(name="h100-a", labels={})
        session.add_all([repository, runner])
        session.flush()
        (job,) = queue.enqueue(session, repository_id=repository.id, sha=sha_for("c0"),
                               branch="main", label_sets=[{}], max_attempts=2)  # fmt: skip
        assert queue.claim(session, runner, lease_seconds=600) is not None
        job_id = job.id
    with factory() as session, session.begin():
        session.execute(update(Job).values(lease_expires_at=utcnow() - timedelta(seconds=1)))

    def requeued() -> bool:
        with factory() as session:
            return session.get(Job, job_id).state == "queued"  # type: ignore[union-attr]

    async def main() -> bool:
        task = asyncio.create_task(reap_forever(factory, interval=0.05))
        await until(requeued)
        return await cancelled(task)

    assert run_apart(main()) is True
    with factory() as session:
        job = session.get(Job, job_id)
        assert job is not None
        assert (job.attempt, job.runner_id) == (1, None)
        assert job.failure == "the lease of the previous attempt expired"

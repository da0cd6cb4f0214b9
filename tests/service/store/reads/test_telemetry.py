"""The database's gauges (service.store.reads.telemetry), on SQLite and PostgreSQL, over runs
stored through the ingest: the queue's waiting and running jobs by label set (both states shown
at zero for no label set), the runs still to analyse and the age of the oldest (zero when none
waits), alerts in every state (zero where none is), and the agents (runners with a token that
is not revoked) with the seconds since each was last seen, one never seen left out."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.backlog import analyse_run, segment_pending
from service.models import Alert, Run, Runner, Series
from service.models.alert import ALERT_STATES
from service.models.base import utcnow
from service.store.jobs import queue
from service.store.reads.telemetry import gauges
from tests.documents import document
from tests.service.store.conftest import Store


def read(
    factory: sessionmaker[Session], now: datetime | None = None
) -> dict[tuple[str, tuple[str, ...]], float]:
    """(gauge, its labels' values) -> value."""
    with factory() as session:
        registry = gauges(session, now)
    return {
        (sample.name, tuple(sample.labels.values())): sample.value
        for family in registry.collect()
        for sample in family.samples
    }


def test_an_empty_database_reads_as_zeros(factory: sessionmaker[Session]) -> None:
    values = read(factory)
    assert values == {
        ("kernelwatch_queue_jobs", ("queued", "")): 0,
        ("kernelwatch_queue_jobs", ("running", "")): 0,
        ("kernelwatch_analysis_backlog_runs", ()): 0,
        ("kernelwatch_analysis_backlog_oldest_seconds", ()): 0,
        **{("kernelwatch_alerts", (state,)): 0 for state in ALERT_STATES},
        ("kernelwatch_runners", ()): 0,
    }


def test_the_queue_counts_waiting_and_running_jobs_by_label_set(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0"))
    with factory() as session, session.begin():
        repository_id = session.scalar(select(Run.repository_id))
        jobs = queue.enqueue(session, repository_id=repository_id, sha="a" * 40, branch="main",
                             label_sets=[{"gpu": "h100"}, {"gpu": "h100"}, {}, {}],
                             max_attempts=1)  # fmt: skip
        jobs[0].state, jobs[2].state = "running", "succeeded"
    values = read(factory)
    queued = {k[1]: v for k, v in values.items() if k[0] == "kernelwatch_queue_jobs"}
    assert queued == {("queued", ""): 1, ("running", ""): 0, ("queued", "gpu=h100"): 1,
                      ("running", "gpu=h100"): 1}  # fmt: skip


def test_the_backlog_counts_runs_waiting_for_either_step_and_ages_the_oldest(
    factory: sessionmaker[Session], store: Store
) -> None:
    first = store(document(commit="c0"))
    second = store(document(commit="c1"))
    with factory() as session:
        stored_at = session.scalar(select(Run.received_at).where(Run.id == first))
    values = read(factory, stored_at + timedelta(seconds=90))
    assert values["kernelwatch_analysis_backlog_runs", ()] == 2
    assert values["kernelwatch_analysis_backlog_oldest_seconds", ()] == 90
    analyse_run(factory, first)  # its verdicts, not yet its change points: still waiting
    assert read(factory)["kernelwatch_analysis_backlog_runs", ()] == 2
    segment_pending(factory)
    analyse_run(factory, second)
    values = read(factory)
    assert values["kernelwatch_analysis_backlog_runs", ()] == 0
    assert values["kernelwatch_analysis_backlog_oldest_seconds", ()] == 0


def test_alerts_are_counted_in_every_state(factory: sessionmaker[Session], store: Store) -> None:
    run_id = store(document(commit="c0"))
    with factory() as session, session.begin():
        run = session.get(Run, run_id)
        series_id = session.scalar(select(Series.id))
        for state in ("open", "open", "fixed"):
            session.add(Alert(repository_id=run.repository_id, series_id=series_id,
                              run_id=run.id, commit_id=run.commit_id, branch="main",
                              change=0.1, state=state))  # fmt: skip
    alerts = {k[1][0]: v for k, v in read(factory).items() if k[0] == "kernelwatch_alerts"}
    assert alerts == {**dict.fromkeys(ALERT_STATES, 0), "open": 2, "fixed": 1}


def test_agents_are_the_runners_with_a_live_token_each_aged_since_last_seen(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0"))  # its runner section names h100-a: no agent, no token
    now = utcnow()
    with factory() as session, session.begin():
        session.add_all([
            Runner(name="seen", token_hash="1" * 64, last_seen_at=now - timedelta(seconds=30)),
            Runner(name="never-seen", token_hash="2" * 64),
            Runner(name="revoked", token_hash="3" * 64, revoked_at=now, last_seen_at=now),
        ])  # fmt: skip
    values = read(factory, now)
    seen = {k[1]: v for k, v in values.items() if k[0] == "kernelwatch_runner_last_seen_seconds"}
    assert seen == {("seen",): 30}
    assert values["kernelwatch_runners", ()] == 2
    with factory() as session, session.begin():
        # A clock behind the database's: never a negative age.
        session.execute(update(Runner).values(last_seen_at=now + timedelta(seconds=5)))
    assert read(factory, now)["kernelwatch_runner_last_seen_seconds", ("seen",)] == 0

"""The analysis backlog: runs stored but not yet analysed, worked off after the ingest.

POST /api/v1/runs stores a document and answers; deciding its verdicts and alerts (rank tests
against baselines read from the history) and re-segmenting its series for change points cost
more than storing it, so a stored run waits here (runs.analysed_at and runs.change_points_at
are NULL) and the app works it off a moment later (service.api.background), or, with
`analyse_in_request`, before the POST answers.

Verdicts and alerts are decided run by run, in the order the runs were stored. Change points
are coalesced: the newest run's window on a branch covers the older runs' commits, so a run that
is covered (its commit in a window just re-segmented, its series among those re-segmented) is
marked done without work of its own, and a burst of runs costs one re-segmentation.

Several service processes may work the backlog at once: each step claims its run with a
conditional UPDATE in the transaction that writes the step's rows, so each is done exactly once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, exists, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.analysis.alerts import update_alerts
from service.analysis.changepoints import Segmented, update_change_points
from service.analysis.evaluate import evaluate_run
from service.core.db import one_writer
from service.models import Result, Run, Series
from service.models.base import utcnow

BATCH = 500
CONFIRM_ATTEMPTS = 3


@dataclass(frozen=True)
class Worked:
    analysed: list[str]  # run ids (the documents' own) whose verdicts were decided
    segmented: int  # runs taken off the change-point backlog


def waiting_runs(session: Session, column: ColumnElement) -> list[int]:
    """Up to BATCH runs still waiting for the step `column` records, oldest first."""
    query = select(Run.id).where(column.is_(None)).order_by(Run.id).limit(BATCH)
    return list(session.scalars(query))


def series_pending(session: Session, series_id: int, branch: str | None = None) -> bool:
    """Whether a stored run of the series' repository (on this branch) still waits for change
    points: a run that did not measure the series counts too. Cheap whatever the history
    holds: the backlog's few rows come from their partial index, then by primary key."""
    waiting = waiting_runs(session, Run.change_points_at)
    if not waiting:
        return False
    repository = select(Series.repository_id).where(Series.id == series_id).scalar_subquery()
    query = exists().where(Run.id.in_(waiting), Run.repository_id == repository)
    if branch is not None:
        query = query.where(Run.branch == branch)
    return bool(session.scalar(select(query)))


def runs_pending(session: Session, run_ids: list[int], column: ColumnElement) -> bool:
    if not run_ids:
        return False
    return bool(session.scalar(select(exists().where(Run.id.in_(run_ids), column.is_(None)))))


def backlog_ages(factory: sessionmaker[Session]) -> tuple[datetime | None, datetime | None]:
    """When the newest and the oldest run still waiting for any analysis were stored."""
    waiting = or_(Run.analysed_at.is_(None), Run.change_points_at.is_(None))
    with factory() as session:
        newest, oldest = session.execute(
            select(func.max(Run.received_at), func.min(Run.received_at)).where(waiting)
        ).one()
    return newest, oldest


def analyse_run(factory: sessionmaker[Session], run_id: int) -> str | None:
    """Decide one run's verdicts and alerts; its run id, or None when another process did."""
    with one_writer(factory), factory() as session, session.begin():
        if not _claim(session, run_id, Run.analysed_at):
            return None
        run = session.get(Run, run_id)
        assert run is not None
        verdicts = evaluate_run(session, run)
        update_alerts(session, run, verdicts, max_attempts=CONFIRM_ATTEMPTS)
        return run.run_uuid


def process_pending(
    factory: sessionmaker[Session], on_analysed: Callable[[str], None] | None = None
) -> Worked:
    """Work off what the backlog holds: verdicts first (in store order), then change points."""
    with factory() as session:
        to_analyse = waiting_runs(session, Run.analysed_at)
    analysed = []
    for run_id in to_analyse:
        run_uuid = analyse_run(factory, run_id)
        if run_uuid is not None:
            analysed.append(run_uuid)
            if on_analysed is not None:
                on_analysed(run_uuid)
    return Worked(analysed, segment_pending(factory))


def segment_pending(factory: sessionmaker[Session]) -> int:
    """Re-segment the change-point backlog; the number of runs taken off it."""
    with factory() as session:
        ids = waiting_runs(session, Run.change_points_at)
        if not ids:
            return 0
        runs = session.execute(
            select(Run.id, Run.repository_id, Run.branch, Run.commit_id).where(Run.id.in_(ids))
        ).all()
        measured: dict[int, set[int]] = defaultdict(set)
        for run_id, series_id in session.execute(
            select(Result.run_id, Result.series_id).where(Result.run_id.in_(ids))
        ):
            measured[run_id].add(series_id)
    groups: dict[tuple[int, str], list] = defaultdict(list)
    for row in runs:
        groups[row.repository_id, row.branch].append(row)
    done = 0
    for members in groups.values():
        covered: list[Segmented] = []
        # Newest stored first: its window usually reaches the others' commits.
        for row in sorted(members, key=lambda r: -r.id):
            series = measured.get(row.id, set())
            skip = any(row.commit_id in c.window and series <= c.series for c in covered)
            segmented = _segment(factory, row.id, skip)
            if segmented is not None:
                done += 1
                covered.append(segmented)
    return done


def _segment(factory: sessionmaker[Session], run_id: int, skip: bool) -> Segmented | None:
    """None when another process took the run first."""
    with one_writer(factory), factory() as session, session.begin():
        if not _claim(session, run_id, Run.change_points_at):
            return None
        if skip:
            return Segmented(0, frozenset(), frozenset())
        run = session.get(Run, run_id)
        assert run is not None
        return update_change_points(session, run)


def _claim(session: Session, run_id: int, column: ColumnElement) -> bool:
    claimed = session.execute(
        update(Run)
        .where(Run.id == run_id, column.is_(None))
        .values({column.key: utcnow()})
        .execution_options(synchronize_session=False)
    )
    return bool(claimed.rowcount)

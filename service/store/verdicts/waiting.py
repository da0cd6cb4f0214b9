"""Runs still waiting for a step of analysis: the backlog's queue, read from the store."""

from __future__ import annotations

from sqlalchemy import ColumnElement, exists, select, update
from sqlalchemy.orm import Session

from service.models import Run, Series

BATCH = 500


def waiting_runs(session: Session, column: ColumnElement) -> list[int]:
    """Up to BATCH runs still waiting for the step `column` records, oldest first."""
    query = select(Run.id).where(column.is_(None)).order_by(Run.id).limit(BATCH)
    return list(session.scalars(query))


def reopen(session: Session, run_ids: list[int] | set[int]) -> None:
    """Put analysed runs back on the verdict backlog: they are decided again."""
    if run_ids:
        session.execute(
            update(Run)
            .where(Run.id.in_(list(run_ids)))
            .values(analysed_at=None)
            .execution_options(synchronize_session=False)
        )


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

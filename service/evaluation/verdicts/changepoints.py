"""Change points: where a series' level shifted, over its history along a branch (stored).

Order. A series' points are its medians along the first-parent ancestry of the branch's newest
measured commit (the same line the verdict baselines walk, `baseline.ancestry`), oldest first,
one point per commit (the newest run wins at a commit measured twice). Commit time would mix in
commits that a force push removed from the branch and trust committer clocks; the ancestry the
runner read from git does neither, and without one `ancestry` falls back to the branch's runs by
time anyway. Detection itself is `service.analysis.steps.detect`.

Ingest. Shortly after a run is stored (service.evaluation.backlog, which lets a burst of runs
on one branch cost one re-segmentation), the series the run measured are re-segmented over
their newest MAX_POINTS ancestry commits, or further back when other runs of the same burst sit
there (`reach`: a burst of 120 commits is segmented once over all of them), and their stored
change points on that branch are replaced. Reading the medians is most of the cost (a row
lookup each; 30 series x 200 points is ~25 ms on SQLite), hence 64 points, plenty to place a
shift above the floors. Once a window holds FREEZE_AFTER points, its oldest GUARD points are
context only: change points there stay as stored, so a shift does not vanish as the window
slides past it, and the full history keeps them all.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.orm import Session

from service.analysis.steps import MIN_SIZE, Shift, detect
from service.core.sql import dialect_insert
from service.models import ChangePoint, Commit, Result, Run
from service.models.base import utcnow
from service.store.history.ancestry import MAX_ANCESTRY, ancestry

__all__ = ["Segmented", "Shift", "detect", "update_change_points"]

MAX_POINTS = 64
GUARD = 16
FREEZE_AFTER = 48


# Core rows for the reads at ingest: thousands of medians need no ORM bookkeeping.
RESULTS, COMMITS = Result.__table__.c, Commit.__table__.c
RUNS, CHANGE_POINTS = Run.__table__.c, ChangePoint.__table__.c


def _head(session: Session, run: Run, series_ids: list[int]) -> Commit:
    """The branch's newest measured commit: usually the run's own; not when the run re-measured
    an older commit (a confirmation, a bisection step). One index seek on one series."""
    own = session.get(Commit, run.commit_id)
    assert own is not None
    newest = session.scalar(
        select(RESULTS.commit_id)
        .where(
            RESULTS.series_id == series_ids[0],
            RESULTS.branch == run.branch,
            RESULTS.committed_at > own.committed_at,
        )
        .order_by(RESULTS.committed_at.desc(), RESULTS.id.desc())
        .limit(1)
    )
    head = session.get(Commit, newest) if newest is not None else None
    return head if head is not None else own


def _window_length(line: list[int], reach: Collection[int]) -> int:
    wanted = set(reach)
    deepest = max((i for i, cid in enumerate(line) if cid in wanted), default=-1)
    return min(max(MAX_POINTS, deepest + 1 + GUARD), MAX_ANCESTRY)


@dataclass(frozen=True)
class Segmented:
    """What one re-segmentation covered: a run whose commit is in `window` and whose series are
    all in `series` needs no re-segmentation of its own (service.evaluation.backlog)."""

    written: int
    window: frozenset[int]
    series: frozenset[int]


def update_change_points(session: Session, run: Run, reach: Collection[int] = ()) -> Segmented:
    """Re-segment every series the run measured along its branch. `written` counts the change
    points written (new, or moved medians). An unchanged change point keeps its row and
    `detected_at`; one the new segmentation no longer has is deleted.

    The window is the newest MAX_POINTS commits of the line, or longer so that it holds every
    commit of `reach` on the line (the other runs of a burst) with GUARD commits of context
    before the oldest: the whole burst is segmented at once, as if it had come one by one."""
    conn = session.connection()
    series_ids = sorted(
        set(conn.execute(select(RESULTS.series_id).where(RESULTS.run_id == run.id)).scalars())
    )
    if not series_ids:
        return Segmented(0, frozenset(), frozenset())
    head = _head(session, run, series_ids)
    line = [head.id, *(cid for cid in ancestry(session, head, run.branch) if cid != head.id)]
    window = line[: _window_length(line, reach)]
    when: dict[int, datetime] = {}
    branches: set[str] = set()
    for cid, committed_at, branch in conn.execute(
        select(COMMITS.id, COMMITS.committed_at, RUNS.branch)
        .join(Run, RUNS.commit_id == COMMITS.id)
        .where(COMMITS.id.in_(window))
    ):
        when[cid] = committed_at
        branches.add(branch)
    stored: dict[int, list[Any]] = {}
    for row in conn.execute(
        select(*CHANGE_POINTS, COMMITS.committed_at)
        .join(Commit, COMMITS.id == CHANGE_POINTS.commit_id)
        .where(
            CHANGE_POINTS.series_id.in_(series_ids),
            CHANGE_POINTS.branch == run.branch,
            COMMITS.committed_at >= min(when.values()),
        )
    ):
        stored.setdefault(row.series_id, []).append(row)
    stale: list[int] = []
    fresh: list[dict[str, Any]] = []
    on_line = set(line)
    for sid, points in _points(conn, series_ids, window, when, branches).items():
        guard = GUARD if len(points) >= FREEZE_AFTER else 0
        since = when[points[guard][0]]
        gone, found = _reconcile(points, guard, stored.get(sid, []), on_line, since)
        stale += gone
        fresh += [
            {
                "series_id": sid,
                "branch": run.branch,
                "commit_id": cid,
                "before_median": shift.before_median,
                "after_median": shift.after_median,
                "change": shift.change,
                "detected_at": utcnow(),
            }
            for cid, shift in found.items()
        ]
    if stale:
        session.execute(delete(ChangePoint).where(ChangePoint.id.in_(stale)))
    for i in range(0, len(fresh), 1000):
        _upsert(session, fresh[i : i + 1000])
    return Segmented(len(fresh), frozenset(window), frozenset(series_ids))


def _reconcile(
    points: list[tuple[int, float]], guard: int, stored: list, on_line: set[int], since: datetime
) -> tuple[list[int], dict[int, Shift]]:
    """For one series: the stored rows to delete and the shifts to write, by commit id. Rows at
    active commits (or off the line, from `since` on) give way to this segmentation; rows in the
    guard zone stay, and nothing new lands within MIN_SIZE points of one."""
    index = {cid: i for i, (cid, _) in enumerate(points)}
    frozen = [index[cp.commit_id] for cp in stored if index.get(cp.commit_id, guard) < guard]
    found = {
        points[shift.index][0]: shift
        for shift in detect([median for _, median in points])
        if shift.index >= guard and all(abs(shift.index - i) >= MIN_SIZE for i in frozen)
    }
    stale = []
    for cp in stored:
        shift = found.get(cp.commit_id)
        if shift is not None and _same(cp, shift):
            del found[cp.commit_id]  # unchanged: keep the row as it is
        elif index.get(cp.commit_id, -1) >= guard or (
            cp.commit_id not in on_line and cp.committed_at >= since
        ):
            stale.append(cp.id)
    return stale, found


def _points(
    conn: Connection, series_ids: list[int], window: list[int], when: dict, branches: set[str]
) -> dict[int, list[tuple[int, float]]]:
    """Per series, (commit id, median) at the window's commits, oldest first; the newest run wins
    at a commit measured twice.

    Read as ranges of the (series, branch, time) index over the branches run at those commits:
    `commit_id IN (window)` would make SQLite visit every result the series ever had.
    """
    position = {cid: i for i, cid in enumerate(window)}
    found = conn.execute(
        select(RESULTS.series_id, RESULTS.commit_id, RESULTS.median)
        .where(
            RESULTS.series_id.in_(series_ids),
            RESULTS.branch.in_(branches),
            RESULTS.committed_at >= min(when.values()),
        )
        .order_by(RESULTS.id)
    )
    newest: dict[tuple[int, int], float] = {}
    for sid, cid, median in found.all():
        if cid in position:
            newest[sid, cid] = median  # in id order: the newest run at a commit wins
    chosen: dict[int, list[tuple[int, float]]] = {}
    for (sid, cid), median in newest.items():
        chosen.setdefault(sid, []).append((cid, median))
    return {sid: sorted(points, key=lambda p: -position[p[0]]) for sid, points in chosen.items()}


def _same(cp: Any, shift: Shift) -> bool:
    return (cp.before_median, cp.after_median, cp.change) == (
        shift.before_median, shift.after_median, shift.change
    )  # fmt: skip


def _upsert(session: Session, rows: list[dict]) -> None:
    """Insert; a concurrent ingest of the same series and branch may have stored the same commit
    (PostgreSQL, several replicas): the later values win instead of failing the run."""
    stmt = dialect_insert(session)(ChangePoint).values(rows)
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=["series_id", "branch", "commit_id"],
            set_={c: stmt.excluded[c] for c in ("before_median", "after_median", "change")},
        )
    )

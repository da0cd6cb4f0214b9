"""Change points: where a series' level shifted, over its history along a branch.

Order. A series' points are its medians along the first-parent ancestry of the branch's newest
measured commit (the same line the verdict baselines walk, `baseline.ancestry`), oldest first,
one point per commit (the newest run wins at a commit measured twice). Commit time would mix in
commits that a force push removed from the branch and trust committer clocks; the ancestry the
runner read from git does neither, and without one `ancestry` falls back to the branch's runs by
time anyway.

Detection. An equivalent of E-divisive means from a maintained package: exact penalised
segmentation (PELT, via `ruptures.KernelCPD` with the linear kernel, i.e. the L2 / mean-shift
cost, in C: 0.4 ms for 200 flat points, quadratic in n) of the medians standardised by the
series' own noise. The noise is the MAD of first differences / sqrt(2) (robust to the steps
themselves), never below 0.1% of the level, and the penalty is PENALTY x log(n) in those units, a
conservative BIC (about 0.2% of pure-noise series of 200 points get any candidate).
Candidates are then pruned, weakest first, until every remaining shift between the medians of
its adjacent segments exceeds the floor a verdict would need: the duration class's floor
(`verdicts.class_floor`, larger for shorter kernels) or NOISE_MULTIPLE x the relative noise,
whichever is larger. Segments are at least MIN_SIZE points long, so a single
outlying run never makes a change point, and a shift shows up once MIN_SIZE results after it
are in (the run's own verdict covers the newest commit before that).

Ingest. Shortly after a run is stored (service.analysis.backlog, which lets a burst of runs
on one branch cost one re-segmentation), the series the run measured are re-segmented over
their newest MAX_POINTS ancestry commits and their stored change points on that branch are
replaced. Reading the medians is most of the cost (a row lookup each; 30 series x 200 points is
~25 ms on SQLite), hence 64 points, plenty to place a shift above the floors. Once a window holds
FREEZE_AFTER points, its oldest GUARD points are context only: change points there stay as stored,
so a shift does not vanish as the window slides past it, and the full history keeps them all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

import numpy as np
import ruptures as rpt
from numpy.lib.stride_tricks import sliding_window_view
from sqlalchemy import Connection, delete, select
from sqlalchemy.orm import Session

from service.analysis.baseline import ancestry
from service.analysis.verdicts import NOISE_MULTIPLE, class_floor
from service.core.sql import dialect_insert
from service.models import ChangePoint, Commit, Result, Run
from service.models.base import utcnow

MIN_SIZE = 3
MAX_POINTS = 64
GUARD = 16
FREEZE_AFTER = 48
PENALTY = 3.0
MIN_REL_NOISE = 0.001


@dataclass(frozen=True)
class Shift:
    """A change point: `index` is the first point after the shift."""

    index: int
    before_median: float
    after_median: float
    change: float  # (after - before) / before: positive is slower for a duration


def _median(a: np.ndarray) -> float:
    """np.median without its generality: a few times faster on the short arrays used here."""
    s = np.sort(a)
    return float(s[(s.size - 1) // 2] + s[s.size // 2]) / 2


def noise(values: np.ndarray) -> float:
    """Robust standard deviation of one point: MAD of first differences / sqrt(2)."""
    if values.size < 2:
        return 0.0
    return _median(np.abs(np.diff(values))) * 1.4826 / math.sqrt(2)


def detect(medians: Sequence[float], min_size: int = MIN_SIZE) -> list[Shift]:
    """Change points of a series of medians in order, oldest first; [] when there are none."""
    x = np.asarray(medians, dtype=np.float64)
    n = x.size
    if n < 2 * min_size or not np.all(np.isfinite(x)) or not np.all(x > 0):
        return []  # too short, or not a duration: relative changes need a positive level
    if x.max() - x.min() <= class_floor(float(x.max())) * x.min():
        return []  # every segment median lies in the range, so no shift can reach a floor
    level = _median(x)
    sigma = max(noise(x), MIN_REL_NOISE * level)
    noise_floor = NOISE_MULTIPLE * sigma / level
    if min_size >= 3 and not _may_shift(x, noise_floor):
        return []
    z = ((x - level) / sigma).reshape(-1, 1)
    algo = rpt.KernelCPD(kernel="linear", min_size=min_size).fit(z)
    cuts = [int(b) for b in algo.predict(pen=PENALTY * math.log(n))][:-1]
    while True:
        cuts = _refine(z[:, 0], cuts, min_size)
        shifts, ratios = _shifts(x, cuts, noise_floor)
        if not ratios or min(ratios) > 1:
            return shifts
        del cuts[int(np.argmin(ratios))]  # the weakest shift, relative to its floor


def _may_shift(x: np.ndarray, noise_floor: float) -> bool:
    """False when no two segments of >= 3 points can have medians a floor apart: then the answer
    is [] without segmenting (most series, most of the time; PELT is quadratic on flat data).

    The median of any run of >= 3 consecutive points lies between the smallest and the largest
    median of its windows of 3 and 4 consecutive points (if more than half of a run lay below a
    bound, two of some three consecutive points would; length 4 is the one exception, [lo, hi,
    hi, lo], hence the windows of 4). So no shift can exceed (hi - lo) / lo.
    """
    if x.size < 3:
        return False
    by3 = np.sort(sliding_window_view(x, 3), axis=1)[:, 1]
    by4 = np.sort(sliding_window_view(x, 4), axis=1)[:, 1:3].sum(axis=1) / 2 if x.size > 3 else by3
    lo, hi = min(by3.min(), by4.min()), max(by3.max(), by4.max())
    return bool(hi - lo > max(class_floor(float(hi)), noise_floor) * lo)


def _refine(z: np.ndarray, cuts: list[int], min_size: int) -> list[int]:
    """Move each cut to the best mean-shift split between its neighbours; drop it when that split
    leaves fewer than `min_size` points on a side (a step too recent to tell, or an outlier that
    only the minimum segment length had padded into a segment of its own)."""
    out: list[int] = []
    for i in range(len(cuts)):
        a = out[-1] if out else 0
        b = cuts[i + 1] if i + 1 < len(cuts) else z.size
        seg = z[a:b]
        k = np.arange(1, seg.size)
        s1, s2 = np.cumsum(seg), np.cumsum(seg * seg)
        left = s2[:-1] - s1[:-1] ** 2 / k
        right = (s2[-1] - s2[:-1]) - (s1[-1] - s1[:-1]) ** 2 / (seg.size - k)
        cut = a + 1 + int(np.argmin(left + right))
        if cut - a >= min_size and b - cut >= min_size:
            out.append(cut)
    return out


def _shifts(x: np.ndarray, cuts: list[int], noise_floor: float) -> tuple[list[Shift], list[float]]:
    """Each cut's shift between the medians of its adjacent segments, and the ratio of its size to
    its floor."""
    bounds = [0, *cuts, x.size]
    levels = [_median(x[a:b]) for a, b in pairwise(bounds)]
    shifts, ratios = [], []
    for i, cut in enumerate(cuts):
        before, after = levels[i], levels[i + 1]
        change = (after - before) / before
        floor = max(class_floor(min(before, after)), noise_floor)
        shifts.append(Shift(cut, before, after, change))
        ratios.append(abs(change) / floor)
    return shifts, ratios


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


@dataclass(frozen=True)
class Segmented:
    """What one re-segmentation covered: a run whose commit is in `window` and whose series are
    all in `series` needs no re-segmentation of its own (service.analysis.backlog)."""

    written: int
    window: frozenset[int]
    series: frozenset[int]


def update_change_points(session: Session, run: Run) -> Segmented:
    """Re-segment every series the run measured along its branch. `written` counts the change
    points written (new, or moved medians). An unchanged change point keeps its row and
    `detected_at`; one the new segmentation no longer has is deleted."""
    conn = session.connection()
    series_ids = sorted(
        set(conn.execute(select(RESULTS.series_id).where(RESULTS.run_id == run.id)).scalars())
    )
    if not series_ids:
        return Segmented(0, frozenset(), frozenset())
    head = _head(session, run, series_ids)
    line = [head.id, *(cid for cid in ancestry(session, head, run.branch) if cid != head.id)]
    window = line[:MAX_POINTS]
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

"""The baseline of a series at a commit: its ancestors' results since the last level shift.

The ancestors are the commit's first-parent line (`ancestry`); the series' nearest WINDOW
results along it are read with the level shifts recorded at them (`_markers`), and
`service.analysis.segments` says where the newest segment starts. Its K nearest results (their
samples) are what the head is tested against; the medians of the whole segment give the noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from service.analysis.segments import Point, Segment, segment_of
from service.core.sql import among
from service.models import Alert, Result, Verdict
from service.store.history.ancestry import nearest_results
from service.store.history.samples import unpack_samples

K = 8  # results of the segment whose samples are the baseline
WINDOW = 64  # results read per series to find its segment


@dataclass(frozen=True)
class BaselineResult:
    result_id: int
    commit_id: int
    median: float
    samples: np.ndarray
    process_counts: list[int]  # samples per timing process, stored back to back
    run_id: int


@dataclass(frozen=True)
class Baseline:
    """What a series' result at the head is compared with: the newest segment of its ancestors'
    results (`segments.segment_of`), its K nearest results with their samples, and the medians
    of the whole segment (the noise floor's spread)."""

    results: list[BaselineResult]  # nearest first
    segment_medians: list[float]  # nearest first
    segment: Segment
    start_commit_id: int
    # The medians of every result read (WINDOW at most), nearest first: how far the series'
    # runs wander (service.analysis.wander).
    history: list[float] = field(default_factory=list)
    # The run of each of them (the runs where the series of a run can be set beside each
    # other: service.analysis.run_offset).
    history_runs: list[int] = field(default_factory=list)


def baselines(
    session: Session, series_ids: list[int], commit_ids: list[int], k: int = K
) -> dict[int, Baseline]:
    """Per series with an ancestor result, its baseline: the segment since the last level shift
    among its nearest WINDOW ancestor results, and that segment's nearest `k` results."""
    nearest = nearest_results(session, series_ids, commit_ids, WINDOW)
    markers, outliers = _markers(session, nearest)
    chosen: dict[int, tuple[list, Segment, int]] = {}
    for sid, rows in nearest.items():
        points = [
            Point(cid, median, *markers.get((sid, cid), (None, ""))) for _, cid, median, _ in rows
        ]
        segment = segment_of(points)
        level = rows[: segment.length]
        # A run the next one showed off its level (an outlier by the series' wander) stays out
        # of the level's baseline: in a level of two, a median of two is their mean.
        kept = [r for r in level if r[0] not in outliers] or level
        chosen[sid] = (kept, segment, level[-1][1])
    wanted = [rid for rows, _, _ in chosen.values() for rid, _, _, _ in rows[:k]]
    stored = (
        {
            rid: (blob, counts)
            for rid, blob, counts in session.execute(
                select(Result.id, Result.samples, Result.process_counts).where(
                    among(session, Result.id, wanted)
                )
            )
        }
        if wanted
        else {}
    )
    return {
        sid: Baseline(
            [
                BaselineResult(
                    rid,
                    cid,
                    median,
                    unpack_samples(stored[rid][0]),
                    list(stored[rid][1] or []),
                    run_id,
                )
                for rid, cid, median, run_id in rows[:k]
            ],
            [median for _, _, median, _ in rows],
            segment,
            start,
            [median for _, _, median, _ in nearest[sid]],
            [run_id for _, _, _, run_id in nearest[sid]],
        )
        for sid, (rows, segment, start) in chosen.items()
    }


_SHIFT_VERDICTS = {"regressed": "regression", "improved": "improvement"}


def _markers(
    session: Session, nearest: dict[int, list[tuple[int, int, float, int]]]
) -> tuple[dict[tuple[int, int], tuple[str | None, str]], set[int]]:
    """(series, commit) -> (marker, note) for the level shifts recorded at the points read:
    the verdicts that found a change there, overridden by what the alerts of those changes say
    (withdrawn when dismissed or invalid, accepted when acknowledged, a new level at the commit
    that fixed it); and the results among them whose verdict found them outliers."""
    point = {rid: (sid, cid) for sid, rows in nearest.items() for rid, cid, _, _ in rows}
    if not point:
        return {}, set()
    runs = {run_id for rows in nearest.values() for _, _, _, run_id in rows}
    out: dict[tuple[int, int], tuple[str | None, str]] = {}
    outliers: set[int] = set()
    # By run (its index): the few verdicts that found a change (or an outlier) among the runs.
    for rid, verdict, outlier in session.execute(
        select(Verdict.result_id, Verdict.verdict, Verdict.outlier).where(
            among(session, Verdict.run_id, runs),
            or_(Verdict.verdict.in_(list(_SHIFT_VERDICTS)), Verdict.outlier),
        )
    ):
        if rid in point and outlier:
            outliers.add(rid)
        elif rid in point:
            out[point[rid]] = (_SHIFT_VERDICTS[verdict], "")
    commits = {cid for _, cid in point.values()}
    alerts = session.execute(
        select(
            Alert.id,
            Alert.series_id,
            Alert.commit_id,
            Alert.fixed_by_commit_id,
            Alert.state,
            Alert.updated_by,
        )
        .where(
            among(session, Alert.series_id, list(nearest)),
            Alert.state.in_(("open", "acknowledged", "fixed", "dismissed", "invalid")),
        )
        .order_by(Alert.id)
    ).all()
    for a in alerts:
        at = (a.series_id, a.commit_id)
        if a.commit_id in commits and at in out:
            if a.state in ("dismissed", "invalid"):
                by = "the confirmation" if a.state == "dismissed" else a.updated_by
                out[at] = (None, f"alert {a.id} {a.state} by {by}")
            elif a.state == "acknowledged":
                out[at] = ("acknowledged", f"alert {a.id} acknowledged by {a.updated_by}")
            else:
                out[at] = (out[at][0], f"alert {a.id} {a.state}")
        if a.state == "fixed" and a.fixed_by_commit_id in commits:
            out[(a.series_id, a.fixed_by_commit_id)] = (
                "fixed",
                f"alert {a.id} fixed, closed by {a.updated_by}",
            )
    return out, outliers

"""The baseline of a series at a commit: its ancestors' results since the last level shift.

The ancestors are the commit's first-parent line (`ancestry`); the series' nearest WINDOW
results along it are read with the level shifts recorded at them (`_markers`), and
`service.analysis.segments` says where the newest segment starts. Its K nearest results (their
samples) are what the head is tested against; the medians of the whole segment give the noise.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from service.analysis.segments import Point, Segment, segment_of
from service.analysis.stats import unpack_samples
from service.core.sql import among
from service.models import Alert, Commit, Result, Run, Verdict

K = 8  # results of the segment whose samples are the baseline
WINDOW = 64  # results read per series to find its segment
MAX_ANCESTRY = 1000


@dataclass(frozen=True)
class BaselineResult:
    result_id: int
    commit_id: int
    median: float
    samples: np.ndarray


def ancestry(session: Session, head: Commit, branch: str) -> list[int]:
    """Commit ids of the head's first-parent ancestors that kernelwatch knows, nearest first.

    The runner sends the ancestry it read from git, so commits that were never run do not break
    the line. Without it (a document from elsewhere), the branch's earlier runs stand in.
    """
    if head.ancestors:
        shas = head.ancestors[:MAX_ANCESTRY]
        ids = dict(
            session.execute(
                select(Commit.sha, Commit.id).where(
                    Commit.repository_id == head.repository_id, among(session, Commit.sha, shas)
                )
            ).all()
        )
        return [ids[sha] for sha in shas if sha in ids]
    rows = session.execute(
        select(Commit.id, Commit.committed_at)
        .join(Run, Run.commit_id == Commit.id)
        .where(
            Run.repository_id == head.repository_id,
            Run.branch == branch,
            Commit.committed_at < head.committed_at,
        )
        .group_by(Commit.id, Commit.committed_at)
        .order_by(Commit.committed_at.desc())
        .limit(MAX_ANCESTRY)
    ).all()
    return [commit_id for commit_id, _ in rows]


def nearest_results(
    session: Session, series_ids: list[int], commit_ids: list[int], k: int = K
) -> dict[int, list[tuple[int, int, float, int]]]:
    """Per series, (result id, commit id, median, run id) at its nearest `k` ancestor commits that
    have one, nearest first; the newest run wins at a commit measured twice.

    The ancestry window grows (k, 4k, 16k ... commits) only while some series still lacks k
    results: a run's series usually have results at the nearest commits, so the first small
    window answers with k rows per series instead of every result along the whole ancestry.
    """
    if not series_ids or not commit_ids:
        return {}
    position = {cid: i for i, cid in enumerate(commit_ids)}
    chosen: dict[int, dict[int, tuple[int, int, float, int]]] = defaultdict(dict)
    pending, start, width = set(series_ids), 0, k
    while pending and start < len(commit_ids):
        window = commit_ids[start : start + width]
        rows = _results_at(session, pending, window)
        for rid, sid, cid, median, run_id in sorted(rows, key=lambda r: (position[r[2]], -r[0])):
            per_commit = chosen[sid]
            if cid not in per_commit and len(per_commit) < k:
                per_commit[cid] = (rid, cid, median, run_id)
        pending = {sid for sid in pending if len(chosen[sid]) < k}
        start += width
        width *= 4
    return {sid: list(per.values()) for sid, per in chosen.items() if per}


def _results_at(session: Session, series_ids: set[int], window: list[int]) -> list[Any]:
    """(result id, series id, commit id, median, run id) of the series at the window's commits.

    Read as ranges of the (series, branch, time) index, over the branches and times of the
    window's runs: `commit_id IN (window)` would make SQLite visit every result the series ever
    had (the analysis of a run cost 0.5 s on a history of 5,000 commits)."""
    spans = session.execute(
        select(Run.branch, func.min(Commit.committed_at), func.max(Commit.committed_at))
        .join(Commit, Commit.id == Run.commit_id)
        .where(among(session, Run.commit_id, window))
        .group_by(Run.branch)
    ).all()
    if not spans:
        return []
    wanted = set(window)
    rows = session.execute(
        select(Result.id, Result.series_id, Result.commit_id, Result.median, Result.run_id).where(
            among(session, Result.series_id, series_ids),
            or_(
                *(
                    and_(
                        Result.branch == branch,
                        Result.committed_at >= earliest,
                        Result.committed_at <= latest,
                    )
                    for branch, earliest, latest in spans
                )
            ),
        )
    ).all()
    return [r for r in rows if r.commit_id in wanted]


@dataclass(frozen=True)
class Baseline:
    """What a series' result at the head is compared with: the newest segment of its ancestors'
    results (`segments.segment_of`), its K nearest results with their samples, and the medians
    of the whole segment (the noise floor's spread)."""

    results: list[BaselineResult]  # nearest first
    segment_medians: list[float]  # nearest first
    segment: Segment
    start_commit_id: int


def baselines(
    session: Session, series_ids: list[int], commit_ids: list[int], k: int = K
) -> dict[int, Baseline]:
    """Per series with an ancestor result, its baseline: the segment since the last level shift
    among its nearest WINDOW ancestor results, and that segment's nearest `k` results."""
    nearest = nearest_results(session, series_ids, commit_ids, WINDOW)
    markers = _markers(session, nearest)
    chosen: dict[int, tuple[list, Segment]] = {}
    for sid, rows in nearest.items():
        points = [
            Point(cid, median, *markers.get((sid, cid), (None, ""))) for _, cid, median, _ in rows
        ]
        segment = segment_of(points)
        chosen[sid] = (rows[: segment.length], segment)
    wanted = [rid for rows, _ in chosen.values() for rid, _, _, _ in rows[:k]]
    samples = (
        dict(
            session.execute(
                select(Result.id, Result.samples).where(among(session, Result.id, wanted))
            ).all()
        )
        if wanted
        else {}
    )
    return {
        sid: Baseline(
            [
                BaselineResult(rid, cid, median, unpack_samples(samples[rid]))
                for rid, cid, median, _ in rows[:k]
            ],
            [median for _, _, median, _ in rows],
            segment,
            rows[-1][1],
        )
        for sid, (rows, segment) in chosen.items()
    }


_SHIFT_VERDICTS = {"regressed": "regression", "improved": "improvement"}


def _markers(
    session: Session, nearest: dict[int, list[tuple[int, int, float, int]]]
) -> dict[tuple[int, int], tuple[str | None, str]]:
    """(series, commit) -> (marker, note) for the level shifts recorded at the points read:
    the verdicts that found a change there, overridden by what the alerts of those changes say
    (withdrawn when dismissed or invalid, accepted when acknowledged, a new level at the commit
    that fixed it)."""
    point = {rid: (sid, cid) for sid, rows in nearest.items() for rid, cid, _, _ in rows}
    if not point:
        return {}
    runs = {run_id for rows in nearest.values() for _, _, _, run_id in rows}
    out: dict[tuple[int, int], tuple[str | None, str]] = {}
    # By run (its index): the few verdicts that found a change among the runs read.
    for rid, verdict in session.execute(
        select(Verdict.result_id, Verdict.verdict).where(
            among(session, Verdict.run_id, runs),
            Verdict.verdict.in_(list(_SHIFT_VERDICTS)),
        )
    ):
        if rid in point:
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
    return out

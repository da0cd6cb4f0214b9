"""A commit's first-parent ancestry as kernelwatch knows it, and the series' nearest results
along it: the reads that baselines, change points and the commit's metrics share."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from service.core.sql import among
from service.models import Commit, Result, Run

MAX_ANCESTRY = 1000


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
    session: Session, series_ids: list[int], commit_ids: list[int], k: int
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


def next_results(
    session: Session, head: Commit, branch: str, series_ids: list[int]
) -> dict[int, tuple[int, float]]:
    """Per series, (result id, median) at the nearest descendant of `head` along `branch` that
    has one: the run after the head's on its line (the newest run wins at a commit measured
    twice). A descendant is a later commit whose first-parent ancestry holds the head; where a
    commit lists no ancestry, the branch's next commit in time stands in."""
    if not series_ids:
        return {}
    rows = session.execute(
        select(Result.id, Result.series_id, Result.median, Commit.ancestors, Commit.committed_at)
        .join(Commit, Commit.id == Result.commit_id)
        .where(
            among(session, Result.series_id, series_ids),
            Result.branch == branch,
            Result.committed_at >= head.committed_at,
            Result.commit_id != head.id,
        )
    ).all()
    best: dict[int, tuple[tuple[int, float, int], tuple[int, float]]] = {}
    for rid, sid, median, ancestors, committed_at in rows:
        if ancestors:
            if head.sha not in ancestors:
                continue  # another line: a side branch, or a commit before a force push
            distance = ancestors.index(head.sha)
        elif committed_at > head.committed_at:
            distance = MAX_ANCESTRY
        else:
            continue
        rank = (distance, committed_at.timestamp(), -rid)
        if sid not in best or rank < best[sid][0]:
            best[sid] = (rank, (rid, median))
    return {sid: chosen for sid, (_, chosen) in best.items()}

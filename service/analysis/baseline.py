"""The baseline of a series: its last K results along the branch's first-parent ancestry."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.stats import unpack_samples
from service.core.sql import among
from service.models import Commit, Result, Run

K = 8
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
        rows = session.execute(
            select(
                Result.id, Result.series_id, Result.commit_id, Result.median, Result.run_id
            ).where(
                among(session, Result.series_id, pending),
                among(session, Result.commit_id, window),
            )
        ).all()
        for rid, sid, cid, median, run_id in sorted(rows, key=lambda r: (position[r[2]], -r[0])):
            per_commit = chosen[sid]
            if cid not in per_commit and len(per_commit) < k:
                per_commit[cid] = (rid, cid, median, run_id)
        pending = {sid for sid in pending if len(chosen[sid]) < k}
        start += width
        width *= 4
    return {sid: list(per.values()) for sid, per in chosen.items() if per}


def baselines(
    session: Session, series_ids: list[int], commit_ids: list[int], k: int = K
) -> dict[int, list[BaselineResult]]:
    """Per series, its results at the nearest `k` ancestor commits, with their samples."""
    nearest = nearest_results(session, series_ids, commit_ids, k)
    wanted = [rid for rows in nearest.values() for rid, _, _, _ in rows]
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
        sid: [
            BaselineResult(rid, cid, median, unpack_samples(samples[rid]))
            for rid, cid, median, _ in rows
        ]
        for sid, rows in nearest.items()
    }

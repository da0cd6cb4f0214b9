"""The baseline shown beside each result of a commit: the one its verdict judged against, or,
while its analysis is pending, the nearest earlier result of its series."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Row, select
from sqlalchemy.orm import Session, aliased

from service.core.sql import among
from service.models import Commit, Result, Run
from service.store.history.ancestry import ancestry, nearest_results


class BaselinePoint(NamedTuple):
    median: float
    committed_at: datetime
    sha: str
    run_uuid: str


def baselines_at(
    session: Session,
    results: list[Row[Any]],
    branch: str,
    commit: Commit,
    by_result: dict[int, Row[Any]],
) -> dict[int, BaselinePoint | Row[Any]]:
    """For each result, the nearest earlier result of its series on the branch.

    A result with a verdict has it among the verdict's baseline (its nearest commit, the newest
    result there): what the verdict judged, read without walking the ancestry again (at 10,000
    commits the walk was a third of the answer's queries). The others (analysis pending) take
    the nearest one along the first-parent ancestry when the runner sent it, by commit time
    otherwise.
    """
    judged = {r.id: by_result[r.id] for r in results if r.id in by_result}
    out: dict[int, BaselinePoint | Row[Any]] = _judged(session, results, judged)
    rest = [r for r in results if r.id not in judged]
    if rest:
        out.update(_nearest(session, rest, branch, commit))
    return out


def _judged(
    session: Session, results: list[Row[Any]], verdicts: dict[int, Row[Any]]
) -> dict[int, BaselinePoint]:
    """Per judged result, the newest result of its series at its verdict's nearest baseline
    commit (nearest_results' rule at a commit measured twice)."""
    wanted = {
        # A workload redefined in place was judged against the series it retired.
        r.id: (
            verdicts[r.id].redefined_from_series_id or r.series_id,
            verdicts[r.id].baseline_commits[0],
        )
        for r in results
        if r.id in verdicts and verdicts[r.id].baseline_commits
    }
    if not wanted:
        return {}
    # By commit alone: a few commits' rows, filtered here; with the series as a second array
    # PostgreSQL's generic plan walked the series' whole history (10 ms instead of 2).
    rows = session.execute(
        select(Result.id, Result.series_id, Result.commit_id, Result.median, Result.run_id).where(
            among(session, Result.commit_id, {cid for _, cid in wanted.values()})
        )
    ).all()
    newest: dict[tuple[int, int], tuple[int, int, float, int]] = {}
    for rid, sid, cid, median, run_id in rows:
        if (sid, cid) not in newest or rid > newest[(sid, cid)][0]:
            newest[(sid, cid)] = (rid, cid, median, run_id)
    return _points(session, {rid: newest[at] for rid, at in wanted.items() if at in newest})


def _nearest(
    session: Session, results: list[Row[Any]], branch: str, commit: Commit
) -> dict[int, BaselinePoint | Row[Any]]:
    """Per result, the nearest earlier result of its series along the ancestry (or by time)."""
    if commit.ancestors:
        nearest = nearest_results(
            session, [r.series_id for r in results], ancestry(session, commit, branch), k=1
        )
        return dict(
            _points(
                session,
                {r.id: nearest[r.series_id][0] for r in results if nearest.get(r.series_id)},
            )
        )
    earlier = aliased(Result)
    nearest = (
        select(earlier.id)
        .where(
            earlier.series_id == Result.series_id,
            earlier.branch == branch,
            earlier.committed_at < commit.committed_at,
        )
        .order_by(earlier.committed_at.desc(), earlier.id.desc())
        .limit(1)
        .correlate(Result)
        .scalar_subquery()
    )
    pairs = session.execute(
        select(Result.id, nearest).where(among(session, Result.id, [r.id for r in results]))
    ).all()
    return _with_commits(session, {rid: bid for rid, bid in pairs if bid is not None})


def _points(
    session: Session, found: dict[int, tuple[int, int, float, int]]
) -> dict[int, BaselinePoint]:
    """(result id, commit id, median, run id) per result as baseline points. A handful of
    runs stand behind hundreds of baselines: each is read once, with its commit (joined per
    result row, converting the same commit time 200 times cost 10 ms)."""
    if not found:
        return {}
    # One statement: a baseline's run names its commit.
    runs = {
        run_id: (uuid, sha, at)
        for run_id, uuid, sha, at in session.execute(
            select(Run.id, Run.run_uuid, Commit.sha, Commit.committed_at)
            .join(Commit, Commit.id == Run.commit_id)
            .where(among(session, Run.id, {run_id for _, _, _, run_id in found.values()}))
        )
    }
    return {
        rid: BaselinePoint(median, runs[run_id][2], runs[run_id][1], runs[run_id][0])
        for rid, (_, _, median, run_id) in found.items()
    }


def _with_commits(session: Session, wanted: dict[int, int]) -> dict[int, Row[Any]]:
    if not wanted:
        return {}
    rows = session.execute(
        select(Result.id, Result.median, Result.committed_at, Commit.sha, Run.run_uuid)
        .join(Commit, Commit.id == Result.commit_id)
        .join(Run, Run.id == Result.run_id)
        .where(among(session, Result.id, set(wanted.values())))
    ).all()
    by_id = {r.id: r for r in rows}
    return {rid: by_id[bid] for rid, bid in wanted.items()}

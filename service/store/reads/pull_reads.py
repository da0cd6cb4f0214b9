"""The pull requests page's read: the PRs, each head's newest run and its verdict counts, in
three queries whatever the number of PRs (one a PR would make a page of 1,000 PRs 2,000 round
trips)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.core.sql import among
from service.models import Commit, PullRequest, Repository, Run, Verdict
from service.models.pull_request import pull_branch


@dataclass(frozen=True)
class PullRow:
    repository: str
    pull: PullRequest
    run_uuid: str | None = None  # the head's newest run on the PR's branch
    merge_base: str | None = None
    analysed: bool = False
    verdict_counts: dict[str, int] = field(default_factory=dict)


def pulls(session: Session, repository: str | None, state: str, limit: int) -> list[PullRow]:
    """The PRs, newest activity first (`state` "all" or one state), with their heads' runs."""
    query = (
        select(PullRequest, Repository.name)
        .join(Repository, Repository.id == PullRequest.repository_id)
        .order_by(PullRequest.updated_at.desc(), PullRequest.id.desc())
        .limit(limit)
    )
    if repository:
        query = query.where(Repository.name == repository)
    if state != "all":
        query = query.where(PullRequest.state == state)
    found = session.execute(query).all()
    if not found:
        return []
    wanted = {(pr.repository_id, pull_branch(pr.number), pr.head_sha) for pr, _ in found}
    newest: dict[tuple[int, str, str], tuple[int, str, str | None, datetime | None]] = {}
    for run_id, uuid, merge_base, analysed, repo_id, branch, sha in session.execute(
        select(Run.id, Run.run_uuid, Run.merge_base_sha, Run.analysed_at, Run.repository_id,
               Run.branch, Commit.sha)
        .join(Commit, Commit.id == Run.commit_id)
        .where(
            among(session, Run.repository_id, {k[0] for k in wanted}),
            among(session, Run.branch, {k[1] for k in wanted}),
            among(session, Commit.sha, {k[2] for k in wanted}),
        )
    ):  # fmt: skip
        key = (repo_id, branch, sha)
        if key in wanted and (key not in newest or run_id > newest[key][0]):
            newest[key] = (run_id, uuid, merge_base, analysed)
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    runs = [r[0] for r in newest.values()]
    if runs:
        for run_id, verdict, n in session.execute(
            select(Verdict.run_id, Verdict.verdict, func.count())
            .where(among(session, Verdict.run_id, runs))
            .group_by(Verdict.run_id, Verdict.verdict)
        ):
            counts[run_id][verdict] = n
    out = []
    for pr, repo in found:
        run = newest.get((pr.repository_id, pull_branch(pr.number), pr.head_sha))
        if run is None:
            out.append(PullRow(repo, pr))
            continue
        run_id, uuid, merge_base, analysed = run
        out.append(PullRow(repo, pr, uuid, merge_base, analysed is not None, dict(counts[run_id])))
    return out

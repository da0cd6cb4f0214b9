"""A pull request's rows: the PR as GitHub's events last said (what an event asks for:
service.integrations.github.events), its head's jobs on the branch pull/<number>, and the run of
its merge base that its runs are compared with."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.models import Commit, Job, PullRequest, Repository, Run
from service.models.base import utcnow
from service.models.pull_request import pull_branch
from service.store.jobs import queue
from service.store.upsert import get_or_create

LIVE = ("queued", "running")


def pull_request_row(
    session: Session, repo: Repository, number: int, title: str, head_sha: str, base_ref: str
) -> PullRequest:
    """The PR's row (made open where there is none), its title and target as the event says."""
    row = get_or_create(session, PullRequest, {"repository_id": repo.id, "number": number},
                        state="open", head_sha=head_sha, base_ref=base_ref,
                        title=title[:500])  # fmt: skip
    row.title, row.base_ref, row.updated_at = title[:500], base_ref, utcnow()
    return row


def close(session: Session, repo: Repository, row: PullRequest, state: str) -> int:
    """The PR closed or merged (`state`): what it had queued cancelled; how many."""
    row.state = state
    return queue.cancel_queued(session, repository_id=repo.id, branch=pull_branch(row.number),
                               keep=[], why=f"pull request #{row.number} {state}")  # fmt: skip


def queue_head(
    session: Session,
    repo: Repository,
    row: PullRequest,
    head_sha: str,
    base_sha: str,
    max_attempts: int,
    delivery_id: str,
    summary: str,
) -> tuple[list[int], int]:
    """The PR's head queued on its branch (older queued jobs there cancelled): the job ids,
    how many were cancelled."""
    row.state, row.head_sha = "open", head_sha
    branch = pull_branch(row.number)
    jobs = queue.enqueue(session, repository_id=repo.id, sha=head_sha, branch=branch,
                         label_sets=repo.runner_label_sets, max_attempts=max_attempts,
                         delivery_id=delivery_id, summary=summary)  # fmt: skip
    for job in jobs:
        job.payload = {"pull_request": {"number": row.number, "base_ref": row.base_ref,
                                        "base_sha": base_sha}}  # fmt: skip
    ids = [j.id for j in jobs]
    return ids, queue.cancel_queued(session, repository_id=repo.id, branch=branch, keep=ids)


def queue_merge_base_of(session: Session, run_pk: int, max_attempts: int) -> list[int]:
    """`queue_merge_base` of the stored run `run_pk` (none for a branch's own run)."""
    run = session.get(Run, run_pk)
    if run is None or run.pull_request is None:
        return []
    return queue_merge_base(session, run, max_attempts)


def queue_merge_base(session: Session, run: Run, max_attempts: int) -> list[int]:
    """A PR run's merge base gets a run on the target branch if it has none, done or coming:
    the PR's verdicts compare with it. Job ids queued (none where it is measured already)."""
    if not run.merge_base_sha or not run.base_ref:
        return []
    sha, branch = run.merge_base_sha, run.base_ref
    measured = session.scalar(
        select(Run.id)
        .join(Commit, Commit.id == Run.commit_id)
        .where(Run.repository_id == run.repository_id, Run.branch == branch, Commit.sha == sha)
        .limit(1)
    )
    coming = session.scalar(
        select(Job.id)
        .where(
            Job.repository_id == run.repository_id,
            Job.commit_sha == sha,
            Job.branch == branch,
            Job.state.in_(LIVE),
        )
        .limit(1)
    )
    if measured is not None or coming is not None:
        return []
    repo = session.get(Repository, run.repository_id)
    assert repo is not None
    jobs = queue.enqueue(session, repository_id=repo.id, sha=sha, branch=branch,
                         label_sets=repo.runner_label_sets, max_attempts=max_attempts,
                         summary=f"merge base of #{run.pull_request}")  # fmt: skip
    return [j.id for j in jobs]

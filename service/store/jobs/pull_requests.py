"""Turning a verified GitHub pull_request event into queued jobs, and a PR's runs into the run of
its merge base that they are compared with."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.core import clone_urls
from service.core.settings import Settings
from service.models import Commit, Job, PullRequest, Repository, Run
from service.models.base import utcnow
from service.models.pull_request import pull_branch
from service.schemas.names import GitBranch, RepositoryName
from service.store.jobs import queue
from service.store.upsert import get_or_create

QUEUED_ON = frozenset({"opened", "synchronize", "reopened"})
LIVE = ("queued", "running")


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PullRepository(_Loose):
    full_name: RepositoryName
    clone_url: str | None = Field(default=None, max_length=1000, pattern=r"^$|^[^-]")


class PullRef(_Loose):
    ref: GitBranch
    sha: str = Field(pattern=r"^[0-9a-f]{40}$")


class PullRequestBody(_Loose):
    number: int = Field(ge=1, le=2**31 - 1)
    title: str = ""
    merged: bool = False
    head: PullRef
    base: PullRef


class PullRequestEvent(_Loose):
    action: str = Field(max_length=50)
    number: int = Field(ge=1, le=2**31 - 1)
    pull_request: PullRequestBody
    repository: PullRepository


def handle(
    session: Session, settings: Settings, payload: Any, delivery_id: str
) -> tuple[Literal["queued", "ignored", "done"], str, list[int]]:
    """(what was done, in words, queued job ids) for one pull_request delivery."""
    event = PullRequestEvent.model_validate(payload)
    pr, number = event.pull_request, event.number
    if event.action not in (*QUEUED_ON, "closed"):
        return "ignored", f"pull request #{number} {event.action}: nothing to do", []
    clone_urls.check(event.repository.clone_url, settings)
    repo = get_or_create(
        session,
        Repository,
        {"name": event.repository.full_name},
        clone_url=event.repository.clone_url,
        runner_label_sets=[{}],
        created_at=utcnow(),
    )
    row = get_or_create(
        session,
        PullRequest,
        {"repository_id": repo.id, "number": number},
        state="open",
        head_sha=pr.head.sha,
        base_ref=pr.base.ref,
        title=pr.title[:500],
    )
    row.title, row.base_ref, row.updated_at = pr.title[:500], pr.base.ref, utcnow()
    branch = pull_branch(number)
    if event.action == "closed":
        row.state = "merged" if pr.merged else "closed"
        cancelled = queue.cancel_queued(session, repository_id=repo.id, branch=branch, keep=[],
                                        why=f"pull request #{number} {row.state}")  # fmt: skip
        return (
            "done",
            f"pull request #{number} {row.state}: cancelled {cancelled} queued job(s)",
            [],
        )
    row.state, row.head_sha = "open", pr.head.sha
    jobs = queue.enqueue(
        session,
        repository_id=repo.id,
        sha=pr.head.sha,
        branch=branch,
        label_sets=repo.runner_label_sets,
        max_attempts=settings.max_attempts,
        delivery_id=delivery_id,
        summary=f"#{number} {pr.title}",
    )
    for job in jobs:
        job.payload = {"pull_request": {"number": number, "base_ref": pr.base.ref,
                                        "base_sha": pr.base.sha}}  # fmt: skip
    ids = [j.id for j in jobs]
    cancelled = queue.cancel_queued(session, repository_id=repo.id, branch=branch, keep=ids)
    note = f"; cancelled {cancelled} older queued job(s)" if cancelled else ""
    return (
        "queued",
        f"queued {len(ids)} job(s) for {repo.name}#{number} {pr.head.sha[:12]}{note}",
        ids,
    )


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

"""GitHub's events in: a verified `push` or `pull_request` delivery turned into jobs, once per
delivery (its rows: service.store.jobs.deliveries and pull_requests).

A push queues its head (or every distinct commit, with `queue_every_commit`) on its branch, and
keeps the push's commits on the head's job, over which a regression found at the head is
bisected; a branch deleted or a tag queues nothing; a newer push cancels the branch's queued
jobs (`cancel_superseded`). A pull request opened, pushed to or reopened queues its head on the
branch pull/<number>, compared with its merge base; closed or merged, it cancels what it had
queued. A branch no result document could carry is refused at the door (service.schemas.names).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core import clone_urls
from service.core.errors import Unprocessable
from service.core.settings import Settings
from service.schemas.document import MAX_TEXT
from service.schemas.names import GitBranch, RepositoryName, branch_refusal
from service.store.jobs import deliveries, pull_requests
from service.store.jobs.deliveries import Outcome

ZERO_SHA = "0" * 40
# The most commits of one push that a regression at its head is bisected over.
MAX_PUSH_COMMITS = 64
QUEUED_ON = frozenset({"opened", "synchronize", "reopened"})


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class EventRepository(_Loose):
    full_name: RepositoryName
    # Handed to `git clone` by the runners: a leading "-" would be read as an option.
    clone_url: str | None = Field(default=None, max_length=1000, pattern=r"^$|^[^-]")


def _clip(message: Any) -> Any:
    """A commit message is kept up to MAX_TEXT characters (a push is never refused for one)."""
    return message[:MAX_TEXT] if isinstance(message, str) else message


class PushCommit(_Loose):
    id: str = Field(pattern=r"^[0-9a-f]{40}$", min_length=40, max_length=40)
    message: Annotated[str, BeforeValidator(_clip), StringConstraints(max_length=MAX_TEXT)] = ""
    distinct: bool = True


class PushPayload(_Loose):
    # refs/heads/ and a branch of at most 255 characters, the width of the branch columns.
    ref: str = Field(max_length=266)
    before: str = Field("", pattern=r"^$|^[0-9a-f]{40}$", max_length=40)
    after: str = Field(pattern=r"^[0-9a-f]{40}$", min_length=40, max_length=40)
    deleted: bool = False
    repository: EventRepository
    head_commit: PushCommit | None = None
    commits: list[PushCommit] = Field(default_factory=list)


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
    repository: EventRepository


def receive(
    factory: sessionmaker[Session], settings: Settings, delivery_id: str, event: str, payload: Any
) -> Outcome:
    """Handle one delivery and remember it in the same transaction as the jobs it queued."""
    try:
        with factory() as session, session.begin():
            outcome = _handle(session, settings, event, payload, delivery_id)
            deliveries.remember(session, delivery_id, event, outcome)
    except IntegrityError:
        # The same delivery arrived twice at once; the other request queued the jobs.
        again = deliveries.seen_delivery(factory, delivery_id)
        if again is None:
            raise
        return again
    return outcome


def _handle(
    session: Session, settings: Settings, event: str, payload: Any, delivery_id: str
) -> Outcome:
    if event == "ping":
        return Outcome("done", "pong: the webhook is set up")
    if event == "pull_request":
        return _pull_request(session, settings, payload, delivery_id)
    if event != "push":
        return Outcome(
            "ignored", f"event {event!r} ignored: kernelwatch acts on push and pull_request events"
        )
    return _push(session, settings, PushPayload.model_validate(payload), delivery_id)


def _push(session: Session, settings: Settings, push: PushPayload, delivery_id: str) -> Outcome:
    if not push.ref.startswith("refs/heads/"):
        return Outcome("done", f"{push.ref} is not a branch (a tag push?): nothing queued")
    branch = push.ref.removeprefix("refs/heads/")
    if (why := branch_refusal(branch)) is not None:  # no result document could carry it
        raise Unprocessable(f"invalid push payload: ref: {why}")
    if push.deleted or push.after == ZERO_SHA:
        return Outcome("done", f"branch {branch} was deleted: nothing queued")
    clone_urls.check(push.repository.clone_url, settings)
    repo = deliveries.repository_for(session, push.repository.full_name, push.repository.clone_url)
    if settings.queue_every_commit and push.commits:
        commits = [c for c in push.commits if c.distinct] or push.commits[-1:]
    else:
        commits = [push.head_commit or PushCommit(id=push.after)]
    # The push's commits, oldest first, ending at the head: a regression found at the head is
    # bisected over them (service.evaluation.alerts.bisect).
    pushed = [c.id for c in push.commits if c.distinct][-MAX_PUSH_COMMITS:]
    push_commits = pushed if len(pushed) > 1 and pushed[-1] == push.after else []
    job_ids, cancelled = deliveries.queue_commits(
        session,
        repo,
        branch,
        [(c.id, c.message.split("\n", 1)[0]) for c in commits],
        push_commits={push.after: push_commits} if push_commits else {},
        max_attempts=settings.max_attempts,
        delivery_id=delivery_id,
        cancel_superseded=settings.cancel_superseded,
    )
    note = f"; cancelled {cancelled} older queued job(s)" if cancelled else ""
    return Outcome(
        "queued",
        f"queued {len(job_ids)} job(s) for {repo.name}@{branch} {push.after[:12]}{note}",
        job_ids,
    )


def _pull_request(session: Session, settings: Settings, payload: Any, delivery_id: str) -> Outcome:
    event = PullRequestEvent.model_validate(payload)
    pr, number = event.pull_request, event.number
    if event.action not in (*QUEUED_ON, "closed"):
        return Outcome("ignored", f"pull request #{number} {event.action}: nothing to do")
    clone_urls.check(event.repository.clone_url, settings)
    repo = deliveries.repository_for(
        session, event.repository.full_name, event.repository.clone_url
    )
    row = pull_requests.pull_request_row(session, repo, number, pr.title, pr.head.sha, pr.base.ref)
    if event.action == "closed":
        state = "merged" if pr.merged else "closed"
        cancelled = pull_requests.close(session, repo, row, state)
        return Outcome(
            "done", f"pull request #{number} {state}: cancelled {cancelled} queued job(s)"
        )
    ids, cancelled = pull_requests.queue_head(
        session, repo, row, pr.head.sha, pr.base.sha, settings.max_attempts, delivery_id,
        f"#{number} {pr.title}",
    )  # fmt: skip
    note = f"; cancelled {cancelled} older queued job(s)" if cancelled else ""
    return Outcome(
        "queued", f"queued {len(ids)} job(s) for {repo.name}#{number} {pr.head.sha[:12]}{note}", ids
    )

"""Incoming GitHub deliveries (a verified push, or pull_request: service.store.jobs.pull_requests)
turned into queued jobs, once per delivery. (Outgoing notifications are
service.integrations.notify's.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core import clone_urls
from service.core.errors import Unprocessable
from service.core.settings import Settings
from service.models import Repository, WebhookDelivery
from service.models.base import utcnow
from service.schemas.document import MAX_TEXT
from service.schemas.names import RepositoryName, branch_refusal
from service.store.jobs import pull_requests, queue
from service.store.upsert import get_or_create

ZERO_SHA = "0" * 40
# The most commits of one push that a regression at its head is bisected over.
MAX_PUSH_COMMITS = 64


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PushRepository(_Loose):
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
    repository: PushRepository
    head_commit: PushCommit | None = None
    commits: list[PushCommit] = Field(default_factory=list)


Done = Literal["queued", "ignored", "done"]


@dataclass
class Outcome:
    """What was done with a delivery (the API answers it with an HTTP status of its choosing)."""

    done: Done
    detail: str
    job_ids: list[int] = field(default_factory=list)
    redelivery: bool = False


def seen_delivery(factory: sessionmaker[Session], delivery_id: str) -> Outcome | None:
    with factory() as session:
        seen = session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.delivery_id == delivery_id)
        ).one_or_none()
    if seen is None:
        return None
    return Outcome(
        seen.outcome,  # type: ignore[arg-type]
        f"delivery {delivery_id} was handled already: {seen.detail}",
        list(seen.job_ids),
        redelivery=True,
    )


def record(
    factory: sessionmaker[Session], settings: Settings, delivery_id: str, event: str, payload: Any
) -> Outcome:
    """Handle one delivery and remember it in the same transaction as the jobs it queued."""
    try:
        with factory() as session, session.begin():
            outcome = _handle(session, settings, event, payload, delivery_id)
            session.add(
                WebhookDelivery(
                    delivery_id=delivery_id,
                    event=event,
                    outcome=outcome.done,
                    detail=outcome.detail,
                    job_ids=outcome.job_ids,
                    received_at=utcnow(),
                )
            )
    except IntegrityError:
        # The same delivery arrived twice at once; the other request queued the jobs.
        again = seen_delivery(factory, delivery_id)
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
        done, detail, job_ids = pull_requests.handle(session, settings, payload, delivery_id)
        return Outcome(done, detail, job_ids)
    if event != "push":
        return Outcome(
            "ignored", f"event {event!r} ignored: kernelwatch acts on push and pull_request events"
        )
    push = PushPayload.model_validate(payload)
    if not push.ref.startswith("refs/heads/"):
        return Outcome("done", f"{push.ref} is not a branch (a tag push?): nothing queued")
    branch = push.ref.removeprefix("refs/heads/")
    if (why := branch_refusal(branch)) is not None:  # no result document could carry it
        raise Unprocessable(f"invalid push payload: ref: {why}")
    if push.deleted or push.after == ZERO_SHA:
        return Outcome("done", f"branch {branch} was deleted: nothing queued")
    clone_urls.check(push.repository.clone_url, settings)
    repo = get_or_create(
        session,
        Repository,
        {"name": push.repository.full_name},
        clone_url=push.repository.clone_url,
        runner_label_sets=[{}],
        created_at=utcnow(),
    )
    if settings.queue_every_commit and push.commits:
        commits = [c for c in push.commits if c.distinct] or push.commits[-1:]
    else:
        commits = [push.head_commit or PushCommit(id=push.after)]
    # The push's commits, oldest first, ending at the head: a regression found at the head is
    # bisected over them (service.evaluation.alerts.bisect).
    pushed = [c.id for c in push.commits if c.distinct][-MAX_PUSH_COMMITS:]
    push_commits = pushed if len(pushed) > 1 and pushed[-1] == push.after else []
    job_ids: list[int] = []
    for commit in commits:
        jobs = queue.enqueue(
            session,
            repository_id=repo.id,
            sha=commit.id,
            branch=branch,
            label_sets=repo.runner_label_sets,
            max_attempts=settings.max_attempts,
            delivery_id=delivery_id,
            summary=commit.message.split("\n", 1)[0],
        )
        if push_commits and commit.id == push.after:
            for job in jobs:
                job.payload = {**(job.payload or {}), "push_commits": push_commits}
        job_ids.extend(j.id for j in jobs)
    cancelled = 0
    if settings.cancel_superseded:
        cancelled = queue.cancel_queued(session, repository_id=repo.id, branch=branch, keep=job_ids)
    note = f"; cancelled {cancelled} older queued job(s)" if cancelled else ""
    return Outcome(
        "queued",
        f"queued {len(job_ids)} job(s) for {repo.name}@{branch} {push.after[:12]}{note}",
        job_ids,
    )

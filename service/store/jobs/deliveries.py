"""Incoming GitHub deliveries' rows: each delivery remembered with what was done with it (so a
redelivery is a no-op), the repository it names, and the jobs a push queues (what a delivery
asks for: service.integrations.github.events)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.models import Repository, WebhookDelivery
from service.models.base import utcnow
from service.store.jobs import queue
from service.store.upsert import get_or_create

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


def remember(session: Session, delivery_id: str, event: str, outcome: Outcome) -> None:
    """The delivery and what was done with it, in the transaction of the jobs it queued (a
    second one of the same id fails on its unique key: the caller reads the first's)."""
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


def repository_for(session: Session, name: str, clone_url: str | None) -> Repository:
    """The repository a delivery names, made where there is none."""
    return get_or_create(session, Repository, {"name": name}, clone_url=clone_url,
                         runner_label_sets=[{}], created_at=utcnow())  # fmt: skip


def queue_commits(
    session: Session,
    repo: Repository,
    branch: str,
    commits: list[tuple[str, str]],
    *,
    push_commits: dict[str, list[str]],
    max_attempts: int,
    delivery_id: str,
    cancel_superseded: bool,
) -> tuple[list[int], int]:
    """One job per (sha, subject) and label set of the repository; `push_commits` (a sha ->
    the push's commits) kept on that commit's jobs; the branch's older queued jobs cancelled
    where `cancel_superseded`. (The job ids, how many were cancelled.)"""
    job_ids: list[int] = []
    for sha, subject in commits:
        jobs = queue.enqueue(session, repository_id=repo.id, sha=sha, branch=branch,
                             label_sets=repo.runner_label_sets, max_attempts=max_attempts,
                             delivery_id=delivery_id, summary=subject)  # fmt: skip
        if sha in push_commits:
            for job in jobs:
                job.payload = {**(job.payload or {}), "push_commits": push_commits[sha]}
        job_ids.extend(j.id for j in jobs)
    cancelled = 0
    if cancel_superseded:
        cancelled = queue.cancel_queued(session, repository_id=repo.id, branch=branch, keep=job_ids)
    return job_ids, cancelled

"""The notification events and the targets' cursors (service.models.notification).

`record` writes an event inside the caller's transaction. A delivering process `claim`s a
target (its row is the lease), reads the events after its cursor, and moves the cursor one event
at a time: `delivered`, or `failed` (tried again after a back-off, dropped after the last try).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from service.core.sql import dialect_insert
from service.models import Notification, NotificationTarget

BACKOFF_SECONDS = 2.0  # the first retry; each further one waits twice as long ...
BACKOFF_MAX_SECONDS = 600.0  # ... up to this


def record(
    session: Session, kind: str, key: str, repository: str, branch: str, payload: dict[str, Any]
) -> None:
    """The event, once: another with the same key (an analysis done again) writes nothing."""
    session.execute(
        dialect_insert(session)(Notification)
        .values(kind=kind, key=key[:200], repository=repository, branch=branch, payload=payload)
        .on_conflict_do_nothing(index_elements=["key"])
    )


def claim(session: Session, name: str, now: datetime, lease_seconds: float) -> bool:
    """Whether this process may deliver to target `name` now: its lease is free and its back-off
    over. A target seen for the first time starts after the newest event (no history)."""
    newest = select(func.coalesce(func.max(Notification.id), 0)).scalar_subquery()
    session.execute(
        dialect_insert(session)(NotificationTarget)
        .values(name=name, last_id=newest, attempts=0, delivered=0, dropped=0, last_error="")
        .on_conflict_do_nothing(index_elements=["name"])
    )
    taken = session.execute(
        update(NotificationTarget)
        .where(
            NotificationTarget.name == name,
            or_(NotificationTarget.claimed_until.is_(None), NotificationTarget.claimed_until < now),
            or_(
                NotificationTarget.next_attempt_at.is_(None),
                NotificationTarget.next_attempt_at <= now,
            ),
        )
        .values(claimed_until=now + timedelta(seconds=lease_seconds))
        .execution_options(synchronize_session=False)
    ).rowcount
    return taken == 1


def pending(session: Session, name: str, limit: int = 50) -> tuple[int, list[Notification]]:
    """(failed tries of the first, the events after the target's cursor, oldest first)."""
    target = session.scalars(
        select(NotificationTarget).where(NotificationTarget.name == name)
    ).one()
    events = session.scalars(
        select(Notification)
        .where(Notification.id > target.last_id)
        .order_by(Notification.id)
        .limit(limit)
    ).all()
    return target.attempts, list(events)


def delivered(session: Session, name: str, event_id: int, sent: bool = True) -> None:
    """The cursor past `event_id` (sent, or not meant for this target)."""
    session.execute(
        update(NotificationTarget)
        .where(NotificationTarget.name == name)
        .values(
            last_id=event_id,
            attempts=0,
            next_attempt_at=None,
            delivered=NotificationTarget.delivered + int(sent),
        )
        .execution_options(synchronize_session=False)
    )


def failed(
    session: Session,
    name: str,
    event_id: int,
    attempts: int,
    max_attempts: int,
    error: str,
    now: datetime,
) -> bool:
    """A try of `event_id` failed (its `attempts`-th): wait and try again, or after the last
    try drop it and go on. Whether it was dropped."""
    if attempts >= max_attempts:
        note = f"event {event_id} dropped after {attempts} tries: {error}"
        values: dict[str, Any] = {"last_id": event_id, "attempts": 0, "next_attempt_at": None,
                                  "dropped": NotificationTarget.dropped + 1}  # fmt: skip
    else:
        wait = min(BACKOFF_SECONDS * 2 ** (attempts - 1), BACKOFF_MAX_SECONDS)
        note = f"event {event_id}, try {attempts} of {max_attempts}: {error}"
        values = {"attempts": attempts, "next_attempt_at": now + timedelta(seconds=wait)}
    session.execute(
        update(NotificationTarget)
        .where(NotificationTarget.name == name)
        .values(**values, last_error=note[:2000], claimed_until=None)
        .execution_options(synchronize_session=False)
    )
    return attempts >= max_attempts


def release(session: Session, name: str) -> None:
    session.execute(
        update(NotificationTarget)
        .where(NotificationTarget.name == name)
        .values(claimed_until=None)
        .execution_options(synchronize_session=False)
    )

"""Outgoing notifications: each event recorded once, and each configured target's place in them.

An event (an alert confirmed open or fixed, a broken run on a watched branch) is written in the
transaction that caused it, so none is lost and none is written twice (its key is unique). Each
target (a configured webhook, by name) reads the events in order from its own cursor; the row
is also its lease, so that one process of many delivers to it, and its back-off.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow


class Notification(Base):
    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(30))  # alert_opened | alert_fixed | run_broken
    key: Mapped[str] = mapped_column(String(200), unique=True)  # e.g. "alert 12 open"
    repository: Mapped[str] = mapped_column(String(255))
    branch: Mapped[str] = mapped_column(String(255))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class NotificationTarget(Base):
    __tablename__ = "notification_targets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    last_id: Mapped[int] = mapped_column(default=0)  # the newest event dealt with
    attempts: Mapped[int] = mapped_column(default=0)  # failed tries of the next event
    next_attempt_at: Mapped[datetime | None]
    claimed_until: Mapped[datetime | None]
    delivered: Mapped[int] = mapped_column(default=0)
    dropped: Mapped[int] = mapped_column(default=0)  # given up after the last attempt
    last_error: Mapped[str] = mapped_column(Text, default="")

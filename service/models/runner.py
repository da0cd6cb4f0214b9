"""GPU hosts that execute suites."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow


class Runner(Base):
    __tablename__ = "runners"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    host: Mapped[str] = mapped_column(String(300), default="")
    # Given by an admin with the token (`runner-token create --labels`): they bound what the
    # runner may claim. What it reports about itself at registration only narrows that.
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    reported_labels: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    environment: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # SHA-256 of the bearer token: the token itself is shown once at creation and never stored.
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    revoked_at: Mapped[datetime | None]
    current_job_id: Mapped[int | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime | None]
    # Set by the runner itself when its host cannot run jobs (the GPU gone, the CUDA stack
    # broken): it is given no job until it registers again, which it does once its host
    # checks pass.
    unhealthy_since: Mapped[datetime | None]
    unhealthy_reason: Mapped[str] = mapped_column(String(2000), default="", server_default="")


def claimable_labels(runner: Runner) -> dict[str, Any]:
    """The labels a runner may claim jobs by: its token's, less any it reported otherwise (a
    report narrows, never widens), and runner=<its name> for jobs pinned to it."""
    reported = runner.reported_labels or {}
    kept = {k: v for k, v in (runner.labels or {}).items() if reported.get(k, v) == v}
    return {**kept, "runner": runner.name}

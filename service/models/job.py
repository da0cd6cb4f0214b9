"""The work queue: jobs that runners claim under a lease, and the webhook deliveries behind them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow

JOB_STATES = ("queued", "running", "succeeded", "failed", "cancelled")


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        # The claim reads "oldest queued job whose label set the runner has": state + label key
        # first, id for the order.
        Index("ix_jobs_claim", "state", "label_key", "id"),
        # The reaper scans running jobs by lease expiry.
        Index("ix_jobs_state_lease", "state", "lease_expires_at"),
        # A push cancels the branch's queued jobs; listings filter by repository and commit.
        Index("ix_jobs_repository_branch_state", "repository_id", "branch", "state"),
        Index("ix_jobs_commit_sha", "commit_sha"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    commit_sha: Mapped[str] = mapped_column(String(40))
    branch: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(20), default="run")
    state: Mapped[str] = mapped_column(String(20), default="queued")
    required_labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Canonical "k=v,k=v" of required_labels: claims match it with IN (subsets of runner labels).
    label_key: Mapped[str] = mapped_column(String(1000), default="")
    attempt: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int] = mapped_column(default=3)
    attempt_token_hash: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    runner_id: Mapped[int | None] = mapped_column(ForeignKey("runners.id", ondelete="SET NULL"))
    delivery_id: Mapped[str | None] = mapped_column(String(100))
    summary: Mapped[str] = mapped_column(Text, default="")
    # Kind-specific instructions, e.g. a confirmation's base sha and the workloads to re-time.
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    failure: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class WebhookDelivery(Base):
    """Each X-GitHub-Delivery seen once; a redelivery answers with what the first one did."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(100), unique=True)
    event: Mapped[str] = mapped_column(String(50))
    # What was done with it: "queued" (jobs), "ignored" (an event or action kernelwatch does not
    # act on) or "done" (nothing to queue: a ping, a tag, a deleted branch, a closed pull request)
    outcome: Mapped[str] = mapped_column(String(20), server_default="done")
    detail: Mapped[str] = mapped_column(Text, default="")
    job_ids: Mapped[list[Any]] = mapped_column(default=list)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)

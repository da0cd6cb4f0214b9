"""Alerts (confirmed regressions a person triages) and change points in series histories."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import Float, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow

# suspected: waiting for the confirmation job; dismissed: the confirmation did not reproduce it.
# Every state an alert can be in, the ones a person may set, and the active ones (a new
# regression of the series is part of them; a recovery closes them).
AlertState = Literal["suspected", "open", "acknowledged", "fixed", "invalid", "dismissed"]
TriageState = Literal["open", "acknowledged", "fixed", "invalid"]
ALERT_STATES: tuple[str, ...] = get_args(AlertState)
TRIAGE_STATES: tuple[str, ...] = get_args(TriageState)
ACTIVE_STATES = ("suspected", "open", "acknowledged")


class Alert(Base):
    __tablename__ = "alerts"
    __table_args__ = (
        # The alerts page lists by state; a new result of a series looks up its open alerts.
        Index("ix_alerts_state", "state"),
        Index("ix_alerts_series_id_state", "series_id", "state"),
        # A commit's alerts: those it opened, started (a bisection's first bad commit), fixed.
        Index("ix_alerts_commit_id", "commit_id"),
        Index("ix_alerts_first_bad_commit_id", "first_bad_commit_id"),
        Index("ix_alerts_fixed_by_commit_id", "fixed_by_commit_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id", ondelete="CASCADE"))
    base_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id", ondelete="SET NULL")
    )
    branch: Mapped[str] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(20), default="suspected")
    change: Mapped[float] = mapped_column(Float)
    summary: Mapped[str] = mapped_column(Text, default="")
    attribution: Mapped[dict[str, Any]] = mapped_column(default=dict)
    confirm_job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    confirmed_change: Mapped[float | None] = mapped_column(Float)
    # Bisection over a multi-commit push: the candidate range and, once found, the culprit.
    bisect: Mapped[dict[str, Any]] = mapped_column(default=dict)
    first_bad_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id", ondelete="SET NULL")
    )
    fixed_by_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id", ondelete="SET NULL")
    )
    note: Mapped[str] = mapped_column(Text, default="")
    updated_by: Mapped[str] = mapped_column(String(200), default="kernelwatch")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AlertEvent(Base):
    """Every state change of an alert: who, when, from what to what, and why."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_alert_id", "alert_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    alert_id: Mapped[int] = mapped_column(ForeignKey("alerts.id", ondelete="CASCADE"))
    from_state: Mapped[str | None] = mapped_column(String(20))
    to_state: Mapped[str] = mapped_column(String(20))
    actor: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(default=utcnow)


class ChangePoint(Base):
    """A shift in a series' medians along a branch, found over its whole history."""

    __tablename__ = "change_points"
    __table_args__ = (
        UniqueConstraint("series_id", "branch", "commit_id"),
        Index("ix_change_points_commit_id", "commit_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    branch: Mapped[str] = mapped_column(String(255))
    # The first commit after the shift.
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id", ondelete="CASCADE"))
    before_median: Mapped[float] = mapped_column(Float)
    after_median: Mapped[float] = mapped_column(Float)
    change: Mapped[float] = mapped_column(Float)
    detected_at: Mapped[datetime] = mapped_column(default=utcnow)

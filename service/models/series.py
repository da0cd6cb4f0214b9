"""Series (what is compared over time) and results (one measurement of a series in one run)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow

# The method of a workload's measure's series (its prepare time, peak memory, numeric error:
# service.analysis.measures): the anchor of its alerts, with no results of its own.
MEASURE_METHOD = "measure"


class Series(Base):
    """One (repository, suite, workload + parameters, kernel, metric, timing method,
    fingerprint): never compared across any of them.

    `identity` is a SHA-256 of those fields in canonical form: one fixed-width unique key instead
    of an eight-column one that includes free-form parameter JSON. The timing method is part of
    it because CUDA events and CUPTI kernel timestamps differ by the launch overhead (several
    microseconds): a workload whose method changes starts a new series.
    """

    __tablename__ = "series"
    __table_args__ = (Index("ix_series_lookup", "repository_id", "workload", "kernel", "metric"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    identity: Mapped[str] = mapped_column(String(64), unique=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    suite: Mapped[str] = mapped_column(String(200))
    workload: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    params_key: Mapped[str] = mapped_column(Text)
    kernel: Mapped[str] = mapped_column(String(1000))
    metric: Mapped[str] = mapped_column(String(200))
    unit: Mapped[str] = mapped_column(String(50))
    method: Mapped[str] = mapped_column(String(30))
    fingerprint: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Result(Base):
    """Statistics and raw samples of one series in one run.

    commit_id, branch and committed_at repeat the run's values on purpose: the two hot reads
    ("everything at commit C" and "series S along branch B in commit order, or the nearest result
    before time T") are then single index range scans without joins.
    """

    __tablename__ = "results"
    __table_args__ = (
        Index("ix_results_commit_id", "commit_id"),
        Index("ix_results_series_branch_time", "series_id", "branch", "committed_at"),
        Index("ix_results_run_id", "run_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id", ondelete="CASCADE"))
    branch: Mapped[str] = mapped_column(String(255))
    committed_at: Mapped[datetime]
    n: Mapped[int]
    median: Mapped[float] = mapped_column(Float)
    q1: Mapped[float] = mapped_column(Float)
    q3: Mapped[float] = mapped_column(Float)
    min: Mapped[float] = mapped_column(Float)
    max: Mapped[float] = mapped_column(Float)
    mean: Mapped[float] = mapped_column(Float)
    stdev: Mapped[float] = mapped_column(Float)
    # Raw samples as little-endian float64, all processes concatenated; process_counts splits them.
    samples: Mapped[bytes] = mapped_column(LargeBinary)
    process_counts: Mapped[list[Any]] = mapped_column(default=list)
    method: Mapped[str] = mapped_column(String(30))
    sm_clock_mhz: Mapped[float | None] = mapped_column(Float)

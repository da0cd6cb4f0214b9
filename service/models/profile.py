"""Per-kernel profiling data of a run's workload: ncu captures and the kernel timeline."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, WholeJSON


class NcuKernel(Base):
    """One kernel's ncu capture in a run's workload: its metrics and ncu's rule findings.

    A row per kernel, not per metric: a capture brings a dozen metrics and a few findings that
    are always written and read together (a commit's page, an alert's attribution), never
    queried one by one; one row costs a document's ingest 30 rows where it cost 540, and a
    commit's read 200 where it cost 3,600."""

    __tablename__ = "ncu_kernels"
    __table_args__ = (Index("ix_ncu_kernels_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    # name -> {"value": float, "unit": str}
    metrics: Mapped[dict[str, Any]] = mapped_column(WholeJSON)
    # [{"rule", "type", "description", "estimated_speedup", "speedup_type"}], in ncu's order
    findings: Mapped[list[Any]] = mapped_column(WholeJSON)
    # What determined the counters and where they were measured (the document's; None from
    # older runners): two captures with equal determinants and different commits are two
    # measurements of the same thing, what a counter's noise is learned from.
    determinants: Mapped[str | None] = mapped_column(String(64))
    profiled_at: Mapped[str | None] = mapped_column(String(40))


class TimelineEntry(Base):
    """One kernel's share of a workload's step, like nsys's cuda_gpu_kern_sum row."""

    __tablename__ = "timeline_entries"
    __table_args__ = (Index("ix_timeline_entries_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    calls: Mapped[int]
    total_ns: Mapped[float] = mapped_column(Float)
    share: Mapped[float] = mapped_column(Float)

"""Per-kernel profiling data of a run's workload: ncu metrics, ncu findings, timeline."""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base


class NcuMetric(Base):
    __tablename__ = "ncu_metrics"
    __table_args__ = (Index("ix_ncu_metrics_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    name: Mapped[str] = mapped_column(String(300))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(50))


class NcuFinding(Base):
    __tablename__ = "ncu_findings"
    __table_args__ = (Index("ix_ncu_findings_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    rule: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(20))
    description: Mapped[str] = mapped_column(Text, default="")
    estimated_speedup: Mapped[float | None] = mapped_column(Float)
    speedup_type: Mapped[str] = mapped_column(String(20), default="")


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

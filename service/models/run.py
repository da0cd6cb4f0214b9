"""One runner executing one suite at one commit, and what it recorded per workload."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # The commit page starts from "which runs exist at this commit".
        Index("ix_runs_commit_id", "commit_id"),
        Index("ix_runs_repository_id_branch", "repository_id", "branch"),
        # The analysis backlogs: a handful of rows at most, found without a table scan.
        Index(
            "ix_runs_analysis_pending",
            "id",
            sqlite_where=text("analysed_at IS NULL"),
            postgresql_where=text("analysed_at IS NULL"),
        ),
        Index(
            "ix_runs_change_points_pending",
            "id",
            sqlite_where=text("change_points_at IS NULL"),
            postgresql_where=text("change_points_at IS NULL"),
        ),
        # The pull requests waiting on a merge base (service.evaluation.backlog), every analysis.
        Index(
            "ix_runs_merge_base",
            "repository_id",
            "merge_base_sha",
            sqlite_where=text("merge_base_sha IS NOT NULL"),
            postgresql_where=text("merge_base_sha IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_uuid: Mapped[str] = mapped_column(String(64), unique=True)
    document_sha256: Mapped[str] = mapped_column(String(64))
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    commit_id: Mapped[int] = mapped_column(ForeignKey("commits.id", ondelete="CASCADE"))
    runner_id: Mapped[int | None] = mapped_column(ForeignKey("runners.id", ondelete="SET NULL"))
    job_id: Mapped[int | None]
    suite: Mapped[str] = mapped_column(String(200))
    branch: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(20))
    fingerprint: Mapped[str] = mapped_column(String(64))
    gpu_name: Mapped[str] = mapped_column(String(200), default="")
    environment: Mapped[dict[str, Any]] = mapped_column(default=dict)
    build_status: Mapped[str] = mapped_column(String(20))
    build_seconds: Mapped[float | None] = mapped_column(Float)
    build_log_tail: Mapped[str] = mapped_column(Text, default="")
    log_tail: Mapped[str] = mapped_column(Text, default="")
    # "notice" or "fail": whether a work-counter change alone fails the commit's status.
    work_changes: Mapped[str] = mapped_column(String(10), default="notice", server_default="notice")
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    # When the run's verdicts and alerts were decided, and when its series were re-segmented
    # for change points; NULL while that waits (service.evaluation.backlog, after the ingest).
    analysed_at: Mapped[datetime | None]
    change_points_at: Mapped[datetime | None]
    # A pull request's run (service.models.pull_request): its number, the branch it targets and
    # the merge base its verdicts compare with; all NULL for a branch's own runs.
    pull_request: Mapped[int | None]
    base_ref: Mapped[str | None] = mapped_column(String(255))
    merge_base_sha: Mapped[str | None] = mapped_column(String(40))


class BuildResource(Base):
    """ptxas's view of one compiled kernel: what regressions in registers or spills look like."""

    __tablename__ = "build_resources"
    __table_args__ = (UniqueConstraint("run_id", "kernel"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    arch: Mapped[str] = mapped_column(String(20), default="")
    registers: Mapped[int]
    shared_bytes: Mapped[int]
    spill_stores_bytes: Mapped[int]
    spill_loads_bytes: Mapped[int]
    compile_seconds: Mapped[float | None] = mapped_column(Float)


class RunWorkload(Base):
    """A workload (name + fixed parameters) as executed in one run."""

    __tablename__ = "run_workloads"
    __table_args__ = (UniqueConstraint("run_id", "name", "params_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    params_key: Mapped[str] = mapped_column(Text)
    kernels: Mapped[list[Any]] = mapped_column(default=list)
    status: Mapped[str] = mapped_column(String(30))
    error: Mapped[str] = mapped_column(Text, default="")
    flops: Mapped[float | None] = mapped_column(Float)
    bytes_moved: Mapped[float | None] = mapped_column(Float)
    timeline_source: Mapped[str | None] = mapped_column(String(20))
    timeline_note: Mapped[str] = mapped_column(Text, default="")
    ncu_status: Mapped[str | None] = mapped_column(String(20))
    ncu_note: Mapped[str] = mapped_column(Text, default="")
    # What the workload chose in `prepare` (name -> choice, e.g. an autotuner's config).
    choices: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    # The kernels the launch ran as their compiler left them (schemas.document.CompiledKernelIn).
    compiled: Mapped[list[Any]] = mapped_column(default=list, server_default="[]")
    # Beside the duration: measure -> value (service.analysis.measures.from_run).
    measures: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")


class CorrectnessOutcome(Base):
    __tablename__ = "correctness_outcomes"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(
        ForeignKey("run_workloads.id", ondelete="CASCADE"), unique=True
    )
    passed: Mapped[bool]
    error_norm: Mapped[float | None] = mapped_column(Float)
    tolerance: Mapped[float] = mapped_column(Float)
    norm: Mapped[str] = mapped_column(String(30))
    precision: Mapped[str] = mapped_column(String(20))
    unwritten: Mapped[int] = mapped_column(default=0)

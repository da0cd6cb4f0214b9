"""What the analysis decided for each series of each run, and the alerts it opened."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from service.models.base import Base, utcnow

VERDICTS = ("regressed", "improved", "unchanged", "pending", "new", "missing", "broken")


class Verdict(Base):
    __tablename__ = "verdicts"
    __table_args__ = (
        # The commit page reads a run's verdicts; alerts and trends read a series' verdicts.
        Index("ix_verdicts_run_id", "run_id"),
        Index("ix_verdicts_series_id", "series_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    result_id: Mapped[int | None] = mapped_column(ForeignKey("results.id", ondelete="CASCADE"))
    verdict: Mapped[str] = mapped_column(String(20))
    change: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    q_value: Mapped[float | None] = mapped_column(Float)
    floor: Mapped[float | None] = mapped_column(Float)
    baseline_median: Mapped[float | None] = mapped_column(Float)
    baseline_results: Mapped[int] = mapped_column(default=0)
    # Commit ids of the baseline results, nearest first: what the head was compared with.
    baseline_commits: Mapped[list[Any]] = mapped_column(default=list)
    # Where the baseline's segment starts (the first commit of the level it was compared
    # with), why (service.analysis.segments.KINDS) and a sentence saying so.
    segment_start_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id", ondelete="SET NULL")
    )
    segment_kind: Mapped[str | None] = mapped_column(String(20))
    segment_results: Mapped[int | None]
    segment_note: Mapped[str] = mapped_column(Text, default="", server_default="")
    note: Mapped[str] = mapped_column(Text, default="")
    # A young level's change that the next run did not confirm: this run sat off its level by
    # the series' run-to-run wander, and the level's baseline leaves it out
    # (service.evaluation.verdicts.baseline) while its history keeps it (how far runs wander).
    outlier: Mapped[bool] = mapped_column(default=False, server_default=false())
    # The series this one's first result was compared with: the workload's series before the
    # commit redefined it in place (the same name, kernels and work, other parameters; the old
    # series is missing from the run). service.analysis.redefinition.
    redefined_from_series_id: Mapped[int | None] = mapped_column(
        ForeignKey("series.id", ondelete="SET NULL")
    )
    # The run's common offset taken out of `change` (service.analysis.run_offset: where its
    # kernels that nothing changed sat together off their levels), and how many measured it;
    # None and 0 where nothing was taken out.
    run_offset: Mapped[float | None] = mapped_column(Float)
    offset_controls: Mapped[int] = mapped_column(default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


WORK_VERDICTS = ("changed", "same", "new", "learning")


class WorkVerdict(Base):
    """A work counter of one kernel of a run's workload against the previous run along the
    branch: ncu's replayed counters (instructions, sectors, DRAM bytes read) hardly vary, so an
    exact change is a notice even where timing noise hides it (service.analysis.work)."""

    __tablename__ = "work_verdicts"
    __table_args__ = (Index("ix_work_verdicts_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    kernel: Mapped[str] = mapped_column(String(1000))
    counter: Mapped[str] = mapped_column(String(300))
    # How the counter is shown: the runner's label sent with the capture ("" from older runners).
    label: Mapped[str] = mapped_column(String(200), default="", server_default="")
    value: Mapped[float] = mapped_column(Float)
    base_value: Mapped[float | None] = mapped_column(Float)
    base_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    change: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[str] = mapped_column(String(20))
    # The move this counter of this kernel is allowed (its floor, or a multiple of how far it
    # moved between captures of unchanged code), and how many such pairs of captures showed it
    # (service.analysis.work); a counter with too few is "learning": shown, no notice.
    tolerance: Mapped[float | None] = mapped_column(Float)
    pairs: Mapped[int] = mapped_column(default=0, server_default="0")


class MeasureVerdict(Base):
    """A measure of a run's workload beside its duration (its prepare time, the peak device
    memory of a launch, its numeric error against the reference) against the previous run along
    the branch, each by its own rule (service.analysis.measures)."""

    __tablename__ = "measure_verdicts"
    __table_args__ = (Index("ix_measure_verdicts_run_workload_id", "run_workload_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_workload_id: Mapped[int] = mapped_column(ForeignKey("run_workloads.id", ondelete="CASCADE"))
    measure: Mapped[str] = mapped_column(String(40))
    value: Mapped[float] = mapped_column(Float)
    base_value: Mapped[float | None] = mapped_column(Float)
    base_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    change: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[str] = mapped_column(String(20))
    tolerance: Mapped[float | None] = mapped_column(Float)


# queued: its job not yet posted; confirmed: base and head measured interleaved, the head
# slower; faster: measured, the head faster (a pending improvement's); not_reproduced: measured,
# neither; unmeasured: a side did not measure the workload.
CONFIRMATION_STATES = ("queued", "confirmed", "faster", "not_reproduced", "unmeasured")


class Confirmation(Base):
    """A series' doubtful slowdown at one run measured again: base and head built and timed
    interleaved, A B A B, on one runner (a confirmation job). What it found decides the series'
    verdict at that run wherever it is read (service.evaluation.verdicts.confirmations), for a young
    level's pending change as for a suspected regression, on a branch or a pull request."""

    __tablename__ = "confirmations"
    __table_args__ = (
        UniqueConstraint("run_id", "series_id"),
        Index("ix_confirmations_job_id", "job_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"))
    # The series the base side measures: the workload as it was defined at the base commit
    # (another series where the run redefined it in place); None: the same series.
    base_series_id: Mapped[int | None] = mapped_column(ForeignKey("series.id", ondelete="SET NULL"))
    base_commit_id: Mapped[int | None] = mapped_column(
        ForeignKey("commits.id", ondelete="SET NULL")
    )
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    state: Mapped[str] = mapped_column(String(20), default="queued")
    change: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    base_median: Mapped[float | None] = mapped_column(Float)
    head_median: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    decided_at: Mapped[datetime | None]

"""Answers of the read routes: a commit's metrics and a series' history."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from service.schemas.document import CompiledKernelIn

# The pages show these as percentages; the API's numbers are fractions, and say so.
CHANGE = "relative change as a fraction: 0.05 is +5%"
FRACTION = "as a fraction: 0.05 is 5%"


class CommitPublic(BaseModel):
    sha: str
    repository: str
    parents: list[str]
    author_name: str
    author_email: str
    message: str
    committed_at: datetime


class RunBrief(BaseModel):
    run_id: str
    suite: str
    branch: str
    status: str
    build_status: str
    fingerprint: str
    gpu_name: str
    finished_at: datetime


class Statistics(BaseModel):
    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float
    mean: float
    stdev: float
    rel_iqr: float = Field(description=f"interquartile range over the median, {FRACTION}")


class SegmentPublic(BaseModel):
    """Where the level the head was compared with starts, and why: `start_commit` is the first
    commit of the baseline's segment (the results since the series' last level shift along the
    ancestry); `kind` is history (no shift in the results read), regression, improvement,
    acknowledged, fixed or change_point; `results` counts the segment's results read."""

    start_commit: str
    kind: str
    results: int
    reason: str


class Baseline(BaseModel):
    """What the head is compared with. Once analysed, the verdict's baseline: the median of
    its `results` nearest results since the series' last level shift (`segment`); before that
    (or with no verdict to go by), the nearest earlier result. `commit` and `run_id` name the
    nearest result."""

    commit: str
    run_id: str
    median: float
    committed_at: datetime
    results: int = 1
    segment: SegmentPublic | None = None


class RunOffsetPublic(BaseModel):
    """How far the run's kernels that nothing changed sat off their levels together (relative:
    -0.03 is 3% fast), taken out of the change; `controls`: how many such kernels measured it
    (of the same duration class and timing method)."""

    offset: float = Field(description="relative offset as a fraction: -0.03 is 3% fast")
    controls: int


class Analysis(BaseModel):
    """The verdict against the baseline (the series' nearest results since its last level
    shift along the ancestry)."""

    verdict: str
    change: float | None = Field(description=CHANGE)
    p_value: float | None
    q_value: float | None
    floor: float | None = Field(description=f"the smallest change judged a change, {FRACTION}")
    baseline_median: float | None
    baseline_results: int
    note: str
    segment: SegmentPublic | None = None
    # The series this result was compared with where the commit redefined its workload in place
    # (the same workload, kernels and work under other parameters; that series went missing).
    redefined_from_series: int | None = None
    # The run's common offset taken out of `change`, where its unchanged kernels measured one.
    run_offset: RunOffsetPublic | None = None


class ChangePointPublic(BaseModel):
    """A shift in a series' level along the branch: `commit` is the first commit after it;
    the medians are those of the segments on either side; change = (after - before) / before."""

    commit: str
    committed_at: datetime
    before_median: float
    after_median: float
    change: float = Field(description=CHANGE)
    bisected_to: str | None = Field(
        default=None,
        description="where the shift came in, where a bisection of the push that `commit` "
        "headed found an earlier first bad commit (its alert names the same)",
    )


class AbsentSeries(BaseModel):
    """A series the previous run measured that this one did not: broken or missing."""

    series_id: int
    workload: str
    params: dict[str, Any]
    kernel: str
    metric: str
    verdict: str
    note: str


class MetricPublic(BaseModel):
    series_id: int
    metric: str
    unit: str
    method: str
    sm_clock_mhz: float | None
    statistics: Statistics
    baseline: Baseline | None
    change: float | None = Field(description=CHANGE)
    verdict: str | None = None
    analysis: Analysis | None = None
    # The change point of this series on this branch whose first commit is this commit, if any.
    change_point: ChangePointPublic | None = None
    bisected_to: str | None = Field(
        default=None,
        description="a regression measured here that a bisection of the push found came in "
        "at this earlier commit (counted there, not here)",
    )


# How much of each kernel's ncu capture a commit's metrics carry
# (service.evaluation.reads.commit_ncu).
NcuDetail = Literal["none", "summary", "all"]


# Typed dicts, not models: a commit's answer holds thousands of ncu values, which are stored as
# JSON and pass through as dicts; as models each would be an object built and then dumped.
class NcuValue(TypedDict):
    value: float
    unit: str
    label: NotRequired[str]  # the runner's name for the metric; none from older runners


class NcuFindingPublic(TypedDict):
    rule: str
    type: str
    description: str
    estimated_speedup: float | None
    speedup_type: str


class BuildPublic(BaseModel):
    registers: int
    shared_bytes: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    compile_seconds: float | None
    arch: str


class WorkPublic(BaseModel):
    """A work counter against the previous run: a notice where it changed beyond its tolerance
    (its floor, or a multiple of how far it moved between runs of unchanged code), never a red
    commit; "learning" while too few such runs have shown it steady (shown, no notice)."""

    counter: str
    label: str
    value: float
    base_value: float | None
    change: float | None = Field(description=CHANGE)
    verdict: Literal["changed", "same", "new", "learning"]
    tolerance: float | None = Field(None, description=f"the largest change still same, {FRACTION}")
    pairs: int = 0  # pairs of runs of unchanged code that showed how far it moves
    note: str


class KernelPublic(BaseModel):
    kernel: str
    metrics: list[MetricPublic]
    ncu_metrics: dict[str, NcuValue]
    ncu_findings: list[NcuFindingPublic]
    build: BuildPublic | None
    work: list[WorkPublic] = []


class CorrectnessPublic(BaseModel):
    passed: bool
    error_norm: float | None
    tolerance: float
    norm: str
    precision: str
    unwritten: int


class TimelineKernel(BaseModel):
    kernel: str
    calls: int
    total_ns: float
    share: float


class TimelinePublic(BaseModel):
    source: str
    note: str
    kernels: list[TimelineKernel]


class MeasurePublic(BaseModel):
    """A measure of the workload beside its duration, judged against the previous run along
    the branch by its own rule (service.analysis.measures)."""

    measure: Literal["prepare_seconds", "peak_memory_bytes", "numeric_error"]
    label: str
    unit: str
    value: float
    base_value: float | None
    change: float | None = Field(description=CHANGE)
    verdict: Literal["new", "unchanged", "regressed", "improved"]
    tolerance: float | None = Field(
        description="the relative change that counts (numeric error: the ratio minus 1)"
    )
    said: str = Field(description="in words: 'peak memory 1.07 GB → 1.61 GB (+50%), regressed'")


class WorkloadPublic(BaseModel):
    workload: str
    params: dict[str, Any]
    run_id: str
    fingerprint: str
    status: str
    error: str
    flops: float | None
    bytes: float | None
    correctness: CorrectnessPublic | None
    timeline: TimelinePublic | None
    ncu_status: str | None
    ncu_note: str
    kernels: list[KernelPublic]
    measures: list[MeasurePublic] = Field(
        default_factory=list,
        description="its prepare time (what compiles there, as the runner's caches see it), "
        "the peak device memory of a launch (PyTorch's allocator) and its numeric error "
        "against the reference, each with its verdict",
    )
    compiled: list[CompiledKernelIn] = Field(
        default_factory=list,
        description="the kernels the launch ran as their compiler left them (Triton's "
        "num_warps, num_stages and autotuned config; threads, registers, shared and local "
        "memory per thread from CUPTI)",
    )


class AlertAtCommit(BaseModel):
    role: Literal[
        "opened here", "started here (bisection)", "opened here, bisected to an earlier commit",
        "fixed here",
    ]  # fmt: skip
    id: int
    state: str
    change: float = Field(description=CHANGE)
    summary: str
    series: SeriesPublic
    branch: str
    commit: str = Field(description="the commit whose run opened the alert")
    first_bad_commit: str | None
    fixed_by_commit: str | None


class FoundHere(BaseModel):
    """A regression a bisection found at this commit, against the last good commit it tested."""

    alert_id: int
    state: str
    workload: str
    params: dict[str, Any]
    kernel: str
    series_id: int
    change: float = Field(description=CHANGE)
    p_value: float | None
    good: str | None = Field(description="the last good commit the bisection tested")
    head: str = Field(description="the push's measured head")
    base: str | None = Field(description="the push's measured base")


class CommitMetrics(BaseModel):
    commit: CommitPublic
    branch: str | None
    runs: list[RunBrief]
    workloads: list[WorkloadPublic]
    absent: list[AbsentSeries]
    verdict_counts: dict[str, int] = Field(
        description="the verdicts of the commit's runs, a regression a bisection placed at an "
        "earlier commit counted there (`bisected`), not here"
    )
    alerts: list[AlertAtCommit] = Field(
        default_factory=list,
        description="the alerts this commit opened, started (a bisection's first bad commit: "
        "measured by its paired jobs only, so with no run of its own) or fixed",
    )
    found_here: list[FoundHere] = Field(
        default_factory=list, description="the regressions a bisection found at this commit"
    )
    bisected: dict[str, int] = Field(
        default_factory=dict,
        description="first bad commit -> how many regressions measured here came in there",
    )
    # True while these runs await their analysis (verdicts, for about a second after a store)
    # or re-segmentation (change_point fields): those fields may then be missing or lag.
    analysis_pending: bool = False
    change_points_pending: bool = False
    ncu: NcuDetail = Field(
        description="how much of each kernel's ncu capture `ncu_metrics` and `ncu_findings` "
        "carry here: the request's `ncu` (none leaves them empty whatever was captured)",
    )


class SeriesPublic(BaseModel):
    id: int
    repository: str
    suite: str
    workload: str
    params: dict[str, Any]
    kernel: str
    metric: str
    unit: str
    method: str
    fingerprint: str


class SeriesPoint(BaseModel):
    commit: str
    committed_at: datetime
    author_name: str
    subject: str
    run_id: str
    statistics: Statistics
    samples: list[float] | None = None
    verdict: str | None = Field(
        None,
        description="the series' verdict at this commit, as a commit's metrics give it "
        "(regressed, improved, unchanged, pending, new, ...); null until one is decided",
    )


class SeriesHistory(BaseModel):
    series: SeriesPublic
    branch: str
    points: list[SeriesPoint]
    # Shifts in the series' level within the points shown, oldest first.
    change_points: list[ChangePointPublic] = []
    # True while a stored run on the series' repository and branch awaits re-segmentation (a
    # second or so after a store): change_points may then lag the newest points.
    change_points_pending: bool = False


class WorkJudged(BaseModel):
    verdict: Literal["changed", "same", "new", "learning"]
    change: float | None = Field(description=CHANGE)


class WorkPoint(BaseModel):
    commit: str
    committed_at: datetime
    run_id: str
    values: dict[str, float]
    verdicts: dict[str, WorkJudged]


class KernelWork(BaseModel):
    kernel: str
    points: list[WorkPoint]


class WorkHistory(BaseModel):
    """The work counters of a timing series' kernels along a branch (oldest first)."""

    series: SeriesPublic
    branch: str
    counters: dict[str, str]
    kernels: list[KernelWork]

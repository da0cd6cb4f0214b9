"""The result document (runner → service), validated field by field before anything is stored.

The runner writes plain JSON (it has no pydantic); this module is the service's reading of the
contract (docs/result-document.example.json). Every float must be finite: the base config
refuses NaN and infinities.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from service.core.units import TIME_UNITS, is_known_unit
from service.models.pull_request import pull_branch
from service.schemas.names import GitBranch, RepositoryName
from service.schemas.text import non_finite

SCHEMA_VERSION = 1
MAX_SAMPLES_PER_TIMING = 100_000
MAX_WORKLOADS = 5_000
MAX_TEXT = 65_536

Sha = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9a-fA-F]{40}$", min_length=40, max_length=40, to_lower=True),
]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]
# A kernel's name as a compiler mangles or demangles it: printable ASCII, so that its 1000
# characters stay within PostgreSQL's limit on an index entry (~2700 bytes) in the indexes
# that hold it (series lookup, a build's kernels).
KernelName = Annotated[
    str, StringConstraints(min_length=1, max_length=1000, pattern=r"^[\x20-\x7e]+$")
]
ShortText = Annotated[str, StringConstraints(max_length=1000)]
LongText = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
NonNegative = Annotated[float, Field(ge=0)]


def _in_utc(value: datetime) -> datetime:
    """The time in UTC; refused where that falls outside the years 1-9999, which a time valid in
    its own offset may (0001-01-01T00:00:00+05:00 is in year 0 in UTC)."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} is outside the years 1-9999 once in UTC; send a real time"
        ) from None


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_in_utc)]
# Counts stored in integer columns (32 bits on PostgreSQL).
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
# Texts stored in columns narrower than ShortText.
PersonText = Annotated[str, StringConstraints(max_length=300)]
Unit = Annotated[str, StringConstraints(max_length=50)]  # the width of series.unit
Tag = Annotated[str, StringConstraints(max_length=20)]
ParamText = Annotated[str, StringConstraints(max_length=1000)]
ParamValue = ParamText | int | float | bool | None | list[ParamText | int | float | bool]
# A workload's parameters as canonical JSON (params_key) are part of an index entry too.
MAX_PARAMS_KEY_BYTES = 2000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=MAX_TEXT)


class RepositoryIn(Strict):
    name: RepositoryName
    # May become the clone URL runners pass to `git clone`: no leading "-" (an option).
    url: Annotated[str, StringConstraints(max_length=1000, pattern=r"^$|^[^-]")] | None = None


class CommitIn(Strict):
    sha: Sha
    parents: list[Sha] = Field(default_factory=list, max_length=64)
    ancestors: list[Sha] = Field(
        default_factory=list,
        max_length=1000,
        description="first-parent ancestors, nearest first (git rev-list --first-parent)",
    )
    author_name: PersonText = ""
    author_email: PersonText = ""
    message: LongText = ""
    committed_at: UtcDatetime

    @field_validator("parents", "ancestors")
    @classmethod
    def _acyclic(cls, shas: list[str], info: ValidationInfo) -> list[str]:
        """A commit is never its own parent or ancestor, and a first-parent line never passes
        a commit twice: such a history cannot be ordered, and nothing of it is stored."""
        own, field = info.data.get("sha"), info.field_name
        seen: dict[str, int] = {}
        for i, sha in enumerate(shas):
            if sha == own:
                what = "parent" if field == "parents" else "ancestor"
                raise ValueError(
                    f"{field}[{i}] is the commit itself: a commit cannot be its own {what}"
                )
            if sha in seen:
                raise ValueError(
                    f"{field}[{i}] repeats {field}[{seen[sha]}] ({sha[:12]}): "
                    "a commit's line cannot pass a commit twice (a cycle)"
                )
            seen[sha] = i
        return shas

    @model_validator(mode="after")
    def _first_parent_line(self) -> CommitIn:
        if self.parents and self.ancestors and self.ancestors[0] != self.parents[0]:
            raise ValueError(
                f"ancestors[0] ({self.ancestors[0][:12]}) must be the first parent, parents[0] "
                f"({self.parents[0][:12]}): ancestors is the first-parent line, nearest first"
            )
        return self


class RunnerIn(Strict):
    name: Name
    host: PersonText = ""  # as registered (RunnerRegister.host): the width of runners.host
    labels: dict[Name, ShortText] = Field(default_factory=dict)


class GpuIn(Strict):
    name: Name
    uuid: ShortText = ""
    sm_count: int = Field(gt=0)
    memory_bytes: int = Field(ge=0)
    compute_capability: ShortText = ""


class EnvironmentIn(BaseModel):
    """Known fields are checked; hosts may add more facts, which are stored as given."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    fingerprint: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16,64}$", max_length=64)]
    gpu: GpuIn
    driver_version: ShortText = ""
    cuda_runtime_version: ShortText = ""
    clocks_mhz: dict[Name, NonNegative] = Field(default_factory=dict)
    throttle_reasons_seen: list[ShortText] = Field(default_factory=list)
    ecc_enabled: bool | None = None


def _unique(items: list[Any], what: str) -> list[Any]:
    """`items` (each with a `kernel`) naming each kernel once: a second entry of the same kernel
    would be stored as another row, or fail the store's unique key."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.kernel in seen:
            raise ValueError(f"[{i}]: kernel {item.kernel[:200]!r} is named twice in {what}")
        seen.add(item.kernel)
    return items


class BuildKernelIn(Strict):
    kernel: KernelName
    arch: Tag = ""
    registers: Count
    shared_bytes: Count
    spill_stores_bytes: Count
    spill_loads_bytes: Count
    compile_seconds: NonNegative | None = None


class BuildIn(Strict):
    status: Literal["ok", "failed"]
    seconds: NonNegative | None = None
    log_tail: LongText = ""
    kernels: list[BuildKernelIn] = Field(default_factory=list, max_length=10_000)

    @field_validator("kernels")
    @classmethod
    def _each_kernel_once(cls, kernels: list[BuildKernelIn]) -> list[BuildKernelIn]:
        return _unique(kernels, "build.kernels")


class CorrectnessIn(Strict):
    passed: bool
    error_norm: NonNegative | None = Field(description="null when the output held NaN")
    tolerance: float = Field(gt=0)
    norm: Annotated[str, StringConstraints(min_length=1, max_length=30, strip_whitespace=True)] = (
        "rel_l2"
    )
    precision: Annotated[str, StringConstraints(min_length=1, max_length=20, strip_whitespace=True)]
    unwritten: Count = 0

    @model_validator(mode="after")
    def _pass_is_consistent(self) -> CorrectnessIn:
        if self.passed and (
            self.error_norm is None or self.error_norm > self.tolerance or self.unwritten
        ):
            raise ValueError(
                "passed is true, but error_norm is missing or above tolerance, "
                "or elements are unwritten"
            )
        return self


class ProcessSamplesIn(Strict):
    samples: list[Annotated[float, Field(gt=0)]] = Field(min_length=1)
    sm_clock_mhz: NonNegative | None = None
    throttle_reasons: list[ShortText] = Field(default_factory=list)
    # How long the workload's `prepare` took in this process: inputs, and whatever compiles
    # there (Triton's JIT and autotuning, Inductor, a torch extension's build).
    prepare_seconds: NonNegative | None = None
    # The most device memory the workload's allocator (PyTorch's) held during one launch.
    peak_memory_bytes: Annotated[int, Field(ge=0, le=2**62)] | None = None
    # Which of a run's processes this was: one of the suite's timing processes, a short
    # launch's extra one, one of a doubtful launch's pairs against the base, or one alone. A
    # prepare time depends on what else the process prepared first (the first to touch the
    # GPU or the compiler pays for it), so only those of one kind compare.
    process: Literal["suite", "short", "paired", "alone"] | None = None


class TimingIn(Strict):
    kernel: KernelName
    metric: Name = "duration"
    unit: Unit
    method: Literal["cuda_events", "cupti", "host"]
    l2_flushed: bool = False
    stop_reason: ShortText = ""
    processes: list[ProcessSamplesIn] = Field(min_length=1, max_length=64)
    # Optional summaries the runner computed; the service recomputes them and refuses a mismatch.
    n: int | None = None
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None

    @field_validator("unit")
    @classmethod
    def _time_unit(cls, unit: str) -> str:
        if unit not in TIME_UNITS:
            raise ValueError(f"unknown time unit {unit!r}; use one of {sorted(TIME_UNITS)}")
        return unit

    @model_validator(mode="after")
    def _sample_limit(self) -> TimingIn:
        total = sum(len(p.samples) for p in self.processes)
        if total > MAX_SAMPLES_PER_TIMING:
            raise ValueError(f"{total} samples; at most {MAX_SAMPLES_PER_TIMING} per timing")
        return self


class TimelineKernelIn(Strict):
    kernel: KernelName
    calls: Annotated[int, Field(ge=1, le=2**31 - 1)]
    total_ns: NonNegative
    share: float = Field(ge=0, le=1)


class TimelineIn(Strict):
    source: Literal["nsys", "cupti"]
    reason: LongText = ""
    kernels: list[TimelineKernelIn] = Field(max_length=10_000)

    @field_validator("kernels")
    @classmethod
    def _each_kernel_once(cls, kernels: list[TimelineKernelIn]) -> list[TimelineKernelIn]:
        return _unique(kernels, "the timeline")


class NcuValueIn(Strict):
    value: float
    unit: Unit  # checked by NcuKernelIn, once per kernel rather than once per metric
    # The runner's name for the metric (its one table, runner/profile/ncu.py METRICS), which
    # the service shows instead of ncu's; a document from an older runner has none.
    label: Annotated[str, StringConstraints(max_length=200)] = ""


class NcuFindingIn(Strict):
    rule: Name
    type: Tag = ""
    description: LongText = ""
    estimated_speedup: NonNegative | None = None
    speedup_type: Tag = ""


class NcuKernelIn(Strict):
    kernel: KernelName
    metrics: dict[Annotated[str, StringConstraints(min_length=1, max_length=300)], NcuValueIn]
    findings: list[NcuFindingIn] = Field(default_factory=list, max_length=1000)
    # What determined the counters (the runner's digest of host, tools, workload and the
    # kernel's code: runner.profile.reuse) and the commit they were measured at (a reused
    # entry's is an earlier commit's). Without them (older runners) a counter's noise cannot
    # be learned, so it raises no work notice (service.analysis.work).
    determinants: (
        Annotated[str, StringConstraints(min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$")]
        | None
    ) = None
    profiled_at: Sha | None = None

    @model_validator(mode="after")
    def _known_units(self) -> NcuKernelIn:
        # One call per kernel: a validator per metric value cost a document ~1 ms.
        for name, v in self.metrics.items():
            if not is_known_unit(v.unit):
                raise ValueError(f"metrics[{name!r}].unit: unknown unit {v.unit!r}")
        return self


class NcuIn(Strict):
    status: Literal["ok", "unavailable", "failed"]
    reason: LongText = ""
    kernels: list[NcuKernelIn] = Field(default_factory=list, max_length=10_000)

    @field_validator("kernels")
    @classmethod
    def _each_kernel_once(cls, kernels: list[NcuKernelIn]) -> list[NcuKernelIn]:
        return _unique(kernels, "ncu.kernels")


class CompiledKernelIn(Strict):
    """One kernel a launch ran, as its compiler left it: what CUPTI saw of its launch (threads,
    registers, shared and local memory per thread) and, for a Triton kernel, Triton's own
    knobs (warps, pipeline stages, the config its autotuner chose, the target). A change of
    these between two runs is the author's change, named first in an alert."""

    kernel: KernelName
    compiler: Literal["triton", "other"] = "other"
    threads: Count | None = None
    registers: Count | None = None
    shared_bytes: Count | None = None
    local_bytes: Count | None = Field(
        default=None, description="local memory per thread: where registers spill"
    )
    num_warps: Count | None = None
    num_stages: Count | None = None
    config: ShortText = ""
    target: Tag = ""


class WorkloadIn(Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.-]*$", max_length=200)]
    params: dict[Name, ParamValue] = Field(default_factory=dict)
    kernels: list[KernelName] = Field(default_factory=list, max_length=1000)
    status: Literal["ok", "correctness_failed", "failed", "timeout", "crashed", "skipped"]
    error: LongText = ""
    correctness: CorrectnessIn | None = None
    flops: NonNegative | None = None
    bytes: NonNegative | None = None
    timing: TimingIn | None = None
    timeline: TimelineIn | None = None
    ncu: NcuIn | None = None
    # What the workload chose when it was prepared (an autotuner's config per kernel): a change
    # of choice is a likely cause of a change of time.
    choices: dict[Name, ShortText] = Field(default_factory=dict, max_length=100)
    compiled: list[CompiledKernelIn] = Field(default_factory=list, max_length=1000)

    @field_validator("compiled")
    @classmethod
    def _each_compiled_once(cls, kernels: list[CompiledKernelIn]) -> list[CompiledKernelIn]:
        return _unique(kernels, "compiled")

    @field_validator("params")
    @classmethod
    def _params_fit(cls, params: dict[str, Any]) -> dict[str, Any]:
        size = len(params_key(params).encode())
        if size > MAX_PARAMS_KEY_BYTES:
            raise ValueError(
                f"the parameters take {size} bytes as canonical JSON; at most "
                f"{MAX_PARAMS_KEY_BYTES}"
            )
        return params

    @model_validator(mode="after")
    def _status_is_consistent(self) -> WorkloadIn:
        if self.correctness is not None and not self.correctness.passed and self.status == "ok":
            raise ValueError("status is 'ok' but the correctness check failed")
        if self.timing is not None and self.status != "ok":
            raise ValueError(f"timing given for a workload with status {self.status!r}")
        return self


class PullRequestIn(Strict):
    """A pull request's run: its number, the branch it targets, and the merge base of its head
    with that branch (`git merge-base`), which its verdicts compare with."""

    number: Annotated[int, Field(ge=1, le=2**31 - 1)]
    base_ref: GitBranch
    merge_base: Sha | None = None


class RunDocument(Strict):
    schema_version: Literal[1]
    run_id: Annotated[
        str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{7,63}$", max_length=64)
    ]
    job_id: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None
    lease_token: ShortText | None = None
    suite: Name
    status: Literal["succeeded", "failed", "build_failed"]
    repository: RepositoryIn
    branch: GitBranch
    commit: CommitIn
    runner: RunnerIn | None = None
    started_at: UtcDatetime
    finished_at: UtcDatetime
    environment: EnvironmentIn
    build: BuildIn
    workloads: list[WorkloadIn] = Field(default_factory=list, max_length=MAX_WORKLOADS)
    log_tail: LongText = ""
    work_changes: Literal["notice", "fail"] = Field(
        "notice",
        description="a kernel's work counters moving: a notice beside the timing verdict, or "
        "(a suite's opt-in) a failed commit status",
    )
    paired_base: RunDocument | None = Field(
        default=None,
        description="the base commit, measured interleaved with this one on the same runner: "
        "a confirmation job's, or a run's own for the launches it doubted (the head's first "
        "parent, a pull request's merge base)",
    )
    pull_request: PullRequestIn | None = Field(
        default=None,
        description="set on a pull request's run (branch pull/<number>): compared with the "
        "merge base on base_ref, never part of that branch's history",
    )

    @model_validator(mode="after")
    def _run_is_consistent(self) -> RunDocument:
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        if self.status == "build_failed" and self.build.status != "failed":
            raise ValueError("status is 'build_failed' but build.status is not 'failed'")
        if self.paired_base is not None:
            base = self.paired_base
            if base.paired_base is not None:
                raise ValueError("paired_base cannot itself carry a paired_base")
            if base.commit.sha == self.commit.sha:
                raise ValueError("paired_base measures the run's own commit, not a base")
            if (base.repository.name, base.suite) != (self.repository.name, self.suite):
                raise ValueError(
                    f"paired_base is {base.repository.name} suite {base.suite}, not the run's "
                    f"{self.repository.name} suite {self.suite}"
                )
        if self.pull_request is not None and self.branch != pull_branch(self.pull_request.number):
            raise ValueError(
                f"a pull request's run is on branch {pull_branch(self.pull_request.number)}, "
                f"not {self.branch!r}"
            )
        if self.build.status == "failed" and any(w.timing for w in self.workloads):
            raise ValueError("the build failed, yet workloads carry timings")
        seen: set[tuple[str, str]] = set()
        for w in self.workloads:
            key = (w.name, params_key(w.params))
            if key in seen:
                raise ValueError(f"workload {w.name} {key[1]} appears twice")
            seen.add(key)
        return self


def params_key(params: dict[str, Any]) -> str:
    """Canonical text of a workload's parameters: the same dict always gives the same key."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def find_non_finite(value: Any) -> str | None:
    """The JSON path of the first NaN or infinity in a parsed document, if any (`$` its root)."""
    found = non_finite(value)
    if found is None or found == "$":
        return found
    return found[2:] if found.startswith("$.") else found[1:]

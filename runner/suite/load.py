"""The suite protocol: what a repository declares in `kernelwatch.toml` at its root.

    [suite]
    name = "kernels"                      # the suite's name in the service
    workloads = "kernels.workloads"       # module with all_workloads() -> list of workloads
    check = "kernels.check:check"         # optional: check(workload) -> correctness dict
    device = "cuda"                       # "cuda" (CUDA events, ncu, timeline) or "cpu"
    build = ["python -m kernels.build --out {build_dir}"]   # run in the checkout, in order
    default = ["smoke", "gemm", "train"]  # default selection: tags, or regexes over ids
    timeline = ["train"]                  # tags whose workloads get a kernel timeline

    [timing]                              # all optional
    processes = 3                         # separate processes, each timing every workload
    min_samples = 10
    max_samples = 2000
    max_seconds = 5.0                     # per workload and process
    target_rel_spread = 0.005             # stop once the samples' relative spread is below it
    timeout_seconds = 120                 # a workload running longer is killed and reported
    method = "cuda_events"                # or "cupti"; a workload's own timing_method wins

A workload is any object with `id`, `name`, `params`, `kernels`, `tags`, `precision`,
`tolerance`, `flops`, `bytes` and `prepare(seed) -> instance`, and optionally `timing_method`
("cuda_events" or "cupti": fixed by the definition, never by a measurement, since a series is
never compared across methods), whose instance has `launch()`,
`poison()`, `fetch()`, `reference()`, `reset()` and `close()`. A `prepare` that also takes the
keyword `inputs` gets `inputs="device"` in the timing processes of a CUDA suite (draw the
inputs on the GPU: no kernel's time depends on them; $KERNELWATCH_TIMING_INPUTS=host turns
this off); correctness always calls `prepare(seed)`.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITE_FILE = "kernelwatch.toml"
GPU_METHODS = ("cuda_events", "cupti")
WORK_CHANGES = ("notice", "fail")
_PLACEHOLDERS = ("{build_dir}", "{python}", "{root}")


class SuiteError(ValueError):
    """kernelwatch.toml is missing or says something we cannot act on."""


@dataclass(frozen=True)
class Timing:
    processes: int = 3
    min_samples: int = 10
    max_samples: int = 2000
    max_seconds: float = 5.0
    target_rel_spread: float = 0.005
    timeout_seconds: float = 120.0
    warmup_seconds: float = 0.2
    # How a workload is timed unless it declares its own `timing_method`: "cuda_events" or
    # "cupti" on a GPU ("" = cuda_events), "host" on the CPU. Part of every series' identity.
    method: str = ""


@dataclass(frozen=True)
class Suite:
    root: Path
    name: str
    workloads: str
    device: str = "cuda"
    check: str | None = None
    build: tuple[str, ...] = ()
    default: tuple[str, ...] = ()
    timeline: tuple[str, ...] = ()
    timing: Timing = field(default_factory=Timing)
    # A kernel's work counters moving (service.analysis.work): a "notice" beside the timing
    # verdict, or a red commit ("fail") for a suite that asks for it.
    work_changes: str = "notice"

    def selects(self, workload: dict[str, Any], only: str | None) -> bool:
        """Whether a workload (as listed by the worker) is in the run."""
        if only is not None:
            return re.search(only, workload["id"]) is not None
        if not self.default:
            return True
        tags = set(workload.get("tags", ()))
        return any(p in tags or re.search(p, workload["id"]) for p in self.default)

    def wants_timeline(self, workload: dict[str, Any]) -> bool:
        return self.device == "cuda" and bool(set(workload.get("tags", ())) & set(self.timeline))


def _strings(table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SuiteError(f"[suite] {key} must be a string or a list of strings")
    return tuple(value)


def _timing_value(path: Path, key: str, value: Any) -> Any:
    """A [timing] value of its default's type, the key named where it is not: a count a
    whole number (2.7 processes is no count to round), a number any number, a method a string."""
    kind = type(getattr(Timing, key))
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind is str and isinstance(value, str):
        return value
    wanted = {int: "a whole number", float: "a number", str: "a string"}[kind]
    raise SuiteError(f"{path}: [timing] {key} = {value!r}: it must be {wanted}")


def load_suite(root: Path) -> Suite:
    path = root / SUITE_FILE
    if not path.is_file():
        raise SuiteError(f"{path} does not exist: declare the suite there (see the README)")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path} is not valid TOML: {exc}") from exc
    table = data.get("suite")
    if not isinstance(table, dict):
        raise SuiteError(f"{path} has no [suite] table")
    for key in ("name", "workloads"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise SuiteError(f"{path}: [suite] {key} is required (a string)")
    device = table.get("device", "cuda")
    if device not in ("cuda", "cpu"):
        raise SuiteError(f"{path}: [suite] device must be 'cuda' or 'cpu', not {device!r}")
    timing_table = data.get("timing", {})
    known = set(Timing.__dataclass_fields__)
    unknown = set(timing_table) - known
    if unknown:
        raise SuiteError(f"{path}: unknown [timing] keys {sorted(unknown)}; known: {sorted(known)}")
    timing = Timing(**{k: _timing_value(path, k, v) for k, v in timing_table.items()})
    if timing.processes < 1 or timing.min_samples < 1 or timing.max_samples < timing.min_samples:
        raise SuiteError(f"{path}: [timing] needs processes >= 1 and max >= min samples >= 1")
    for key in ("max_seconds", "target_rel_spread", "timeout_seconds", "warmup_seconds"):
        value = getattr(timing, key)
        if not math.isfinite(value) or value < 0 or (value == 0 and key != "warmup_seconds"):
            least = ">= 0" if key == "warmup_seconds" else "> 0"
            raise SuiteError(f"{path}: [timing] {key} = {value!r}: it must be a number {least}")
    methods = GPU_METHODS if device == "cuda" else ("host",)
    if timing.method and timing.method not in methods:
        raise SuiteError(
            f"{path}: [timing] method {timing.method!r} cannot time a {device} suite; "
            f"use one of {list(methods)}"
        )
    work_changes = table.get("work_changes", "notice")
    if work_changes not in WORK_CHANGES:
        raise SuiteError(
            f"{path}: [suite] work_changes must be one of {list(WORK_CHANGES)}, "
            f"not {work_changes!r}"
        )
    check = table.get("check")
    if check is not None and (not isinstance(check, str) or not check.partition(":")[0]):
        raise SuiteError(f"{path}: [suite] check = {check!r}: it must name a function of the "
                         'suite, "module:function"')  # fmt: skip
    default = _strings(table, "default")
    for pattern in default:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SuiteError(
                f"{path}: [suite] default {pattern!r} is neither a tag nor a regular expression "
                f"over ids ({exc}); escape it, e.g. {re.escape(pattern)!r}"
            ) from None
    return Suite(
        root=root,
        name=table["name"],
        workloads=table["workloads"],
        device=device,
        check=check,
        build=_strings(table, "build"),
        default=default,
        timeline=_strings(table, "timeline"),
        timing=timing,
        work_changes=work_changes,
    )


def expand(command: str, *, build_dir: Path, python: str, root: Path) -> str:
    return (
        command.replace("{build_dir}", str(build_dir))
        .replace("{python}", python)
        .replace("{root}", str(root))
    )

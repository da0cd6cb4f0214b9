"""Nsight Compute for the runner: the bounded command, the CSV parser and the document section.

One profiling pass per workload writes a report (`ncu_command`); `export_command` turns it into
CSV: `--page details` holds the --metrics (section "Command line profiler metrics", under their
ncu names), the sections' metrics and the rule findings, so that one export is enough;
`--page raw` holds the metrics one row per launch. `parse_csv` reads either page (or the raw
page that ncu prints after the program's output when run without a report),
`to_document_section` makes the result document's `ncu` section and `classify_failure` turns a
failed ncu into "unavailable" (no ncu, no counter permission, nothing profiled) or "failed".
Standard library only: this runs on a bare GPU host.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from runner.document.names import document_kernel_name

# The fixed metric set: ncu metric name -> short label. Provenance: the first 13 were confirmed
# on an H100 (ncu 2025.3.1) by tests/runner/fixtures/ncu/h100_kernelwatch_pass_details.csv; the
# rest (issue 15: what attribution needs to turn a move into time) were taken from NVIDIA's
# Nsight Compute metric reference and came back, every one for every kernel, from an H100 in
# the cause benchmark's documents (tests/service/fixtures/causes_h100, benchmarks/cause_gpu.py;
# the ncu pass over its 10 workloads took 11-12 s), but for the L2 read sectors, confirmed on
# the H100 by benchmarks/results/work_counters_h100.json. ncu silently drops unknown names.
METRICS: dict[str, str] = {
    "gpu__time_duration.sum": "duration",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM throughput",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory throughput",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "launch__registers_per_thread": "registers per thread",
    "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": "long-scoreboard stall",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "FMA pipe utilization",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe utilization",
    "lts__t_sector_hit_rate.pct": "L2 hit rate",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared store bank conflicts",
    # DRAM, L2 and L1: how much each moved and how busy each was
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput",
    "lts__t_sectors.sum": "L2 sectors",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 sectors read by the SMs",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "L2 throughput",
    "lts__t_sectors_op_atom.sum": "L2 atomic sectors",
    "lts__t_sectors_op_red.sum": "L2 reduction sectors",
    "l1tex__t_sectors.sum": "L1 sectors",
    "l1tex__t_sector_hit_rate.pct": "L1 hit rate",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "L1 throughput",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum": "global atomic requests",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": "global reduction requests",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": "local load sectors",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": "local store sectors",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "shared wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared load wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared store wavefronts",
    # instructions and the schedulers
    "smsp__inst_executed.sum": "instructions executed",
    "smsp__warps_launched.sum": "warps launched",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue slots busy",
    "smsp__warps_eligible.avg.per_cycle_active": "eligible warps per cycle",
    "smsp__inst_executed_op_local_ld.sum": "local load instructions",
    "smsp__inst_executed_op_local_st.sum": "local store instructions",
    # occupancy, its limiters and the launch
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy",
    "launch__occupancy_limit_registers": "occupancy limit: registers",
    "launch__occupancy_limit_shared_mem": "occupancy limit: shared memory",
    "launch__occupancy_limit_warps": "occupancy limit: warps",
    "launch__occupancy_limit_blocks": "occupancy limit: blocks",
    "launch__shared_mem_per_block_static": "static shared memory per block",
    "launch__shared_mem_per_block_dynamic": "dynamic shared memory per block",
    "launch__waves_per_multiprocessor": "waves per SM",
    "launch__grid_size": "grid size",
    "launch__block_size": "block size",
    "sm__cycles_active.avg": "SM active cycles",
    "sm__cycles_elapsed.avg": "SM elapsed cycles",
    # the top warp-stall reasons (warps stalled per issued instruction)
    **{
        f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio": f"stall: {label}"
        for reason, label in (
            ("long_scoreboard", "long scoreboard (L1TEX: global, local, texture)"),
            ("short_scoreboard", "short scoreboard (MIO: shared memory, special math)"),
            ("mio_throttle", "MIO throttle"),
            ("lg_throttle", "LG throttle (local/global queue)"),
            ("math_pipe_throttle", "math pipe throttle"),
            ("barrier", "barrier"),
            ("membar", "memory barrier"),
            ("wait", "fixed-latency wait"),
            ("not_selected", "not selected"),
            ("selected", "selected"),
            ("dispatch_stall", "dispatch"),
            ("no_instruction", "no instruction"),
            ("drain", "drain"),
            ("branch_resolving", "branch resolving"),
        )
    },
}

# Sections whose rules give the findings we keep (SOLBottleneck, LaunchConfiguration,
# AchievedOccupancy, WorkloadImbalance, pipe, memory and stall rules). Each adds replay passes.
SECTIONS: tuple[str, ...] = (
    "SpeedOfLight", "LaunchStats", "Occupancy", "WorkloadDistribution",
    "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "WarpStateStats",
)  # fmt: skip

# Columns that identify a launch rather than measure it (both pages start with these).
IDENTITY_COLUMNS = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream"}
    | {"Block Size", "Grid Size", "Device", "CC"}
)
MAX_REASON = 8000

_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_DIGITS = re.compile(r"\d[\d,.]*")
_PREFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SCALABLE = {"byte", "cycle", "second", "hz", "inst", "sector", "request", "warp", "thread"}
_SHORT_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class NcuCsvError(ValueError):
    """The text holds no Nsight Compute CSV (no header row)."""


def ncu_command(
    program: Sequence[str],
    *,
    kernel_regex: str | None = None,
    launch_skip: int = 0,
    launch_count: int = 1,
    report: str | Path | None = None,
    metrics: Iterable[str] = METRICS,
    sections: Iterable[str] = SECTIONS,
    ncu: str = "ncu",
) -> list[str]:
    """The one bounded ncu pass over `program`: fixed metrics + rule sections, clocks untouched.

    `ncu --clock-control none --metrics M --section S.. --kernel-name regex:R --launch-skip N
    --launch-count C --target-processes all -o REPORT --force-overwrite program...` writes
    REPORT.ncu-rep (ncu adds the suffix), then `export_command(REPORT.ncu-rep, "details")` (and
    "raw") give the CSVs. Without `report`, `--csv --page raw` prints the raw page instead.
    `kernel_regex` is matched against the function name (ncu's default --kernel-name-base,
    e.g. "gen_sequenced"); `--launch-skip`/`--launch-count` count launches that pass it.
    """
    if not program:
        raise ValueError("no program to profile")
    if launch_skip < 0 or launch_count < 1:
        raise ValueError("launch_skip must be >= 0 and launch_count >= 1")
    cmd = [ncu, "--clock-control", "none"]
    if report is not None:
        cmd += ["-o", str(report), "--force-overwrite"]
    else:
        cmd += ["--csv", "--page", "raw", "--print-units", "base"]
    if names := ",".join(metrics):
        cmd += ["--metrics", names]
    for section in sections:
        cmd += ["--section", section]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    cmd += ["--launch-skip", str(launch_skip), "--launch-count", str(launch_count)]
    return [*cmd, "--target-processes", "all", *program]


def export_command(report: str | Path, page: str, *, ncu: str = "ncu") -> list[str]:
    """`ncu --import` of a report as CSV; `page` is "raw" (metrics) or "details" (findings)."""
    if page not in ("raw", "details"):
        raise ValueError(f"page must be 'raw' or 'details', not {page!r}")
    return [ncu, "--import", str(report), "--csv", "--page", page, "--print-units", "base"]


def parse_csv(text: str) -> list[dict[str, Any]]:
    """Launches, in order, from an ncu `--csv --page raw` or `--page details` output.

    Lines before the header (the program's stdout, `==PROF==`/`==WARNING==`) are skipped.
    Each launch: {"id", "kernel", "block", "grid", "page", "metrics", "findings"}; metrics map a
    name to {"value", "unit"}, values are int/float where ncu printed a number ("60,416" ->
    60416) and stay strings otherwise ("PolicySpread", "n/a"); empty cells are left out.
    Raw pages key metrics by ncu metric name with units from the units row. Details pages key
    them by ncu's display name ("Achieved Occupancy"); a name already taken in that launch by
    another section becomes "<Section Name>/<Metric Name>". Findings are the details page's rule
    rows, deduplicated per launch: {"rule", "type", "description", "estimated_speedup",
    "speedup_type"}. Raises NcuCsvError when no header is found.
    """
    header, body = _table(text)
    if "Metric Name" in header and "Metric Value" in header:
        return _parse_details(header, body)
    return _parse_raw(header, body)


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = re.split(r"\r?\n", text)
    start = next(
        (i for i, ln in enumerate(lines) if ln.startswith('"ID",') and '"Kernel Name"' in ln),
        None,
    )
    if start is None:
        raise NcuCsvError('no Nsight Compute CSV header (a line starting "ID",...) found')
    kept = [ln for ln in lines[start:] if ln.strip() and not ln.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(kept), newline="")))
    header = rows[0]
    return header, [row for row in rows[1:] if row != header]


def _parse_raw(header: list[str], body: list[list[str]]) -> list[dict[str, Any]]:
    units: dict[str, str] = {}
    launches = []
    for row in body:
        rec = dict(zip(header, row, strict=False))
        if not rec.get("ID", "").strip():  # the units row (identity cells empty)
            units = {k: v.strip() for k, v in rec.items()}
            continue
        metrics = {
            col: {"value": _value(raw), "unit": units.get(col, "")}
            for col, raw in rec.items()
            if col not in IDENTITY_COLUMNS and raw.strip()
        }
        launches.append(_launch(rec, "raw", metrics))
    return launches


def _parse_details(header: list[str], body: list[list[str]]) -> list[dict[str, Any]]:
    launches: dict[tuple[str, str], dict[str, Any]] = {}
    for row in body:
        rec = dict(zip(header, row, strict=False))
        if not rec.get("ID", "").strip():
            continue
        key = (rec.get("Process ID", ""), rec["ID"])
        launch = launches.get(key) or launches.setdefault(key, _launch(rec, "details", {}))
        name, value = rec.get("Metric Name", "").strip(), rec.get("Metric Value", "").strip()
        if name and value:
            if name in launch["metrics"]:
                name = f"{rec.get('Section Name', '').strip()}/{name}"
            unit = rec.get("Metric Unit", "").strip()
            launch["metrics"][name] = {"value": _value(value), "unit": unit}
        if rule := rec.get("Rule Name", "").strip():
            speedup = _value(rec.get("Estimated Speedup", ""))
            finding = {
                "rule": rule,
                "type": rec.get("Rule Type", "").strip(),
                "description": rec.get("Rule Description", "").strip(),
                "estimated_speedup": float(speedup) if _is_number(speedup) else None,
                "speedup_type": rec.get("Estimated Speedup Type", "").strip(),
            }
            if finding not in launch["findings"]:
                launch["findings"].append(finding)
    return list(launches.values())


def _launch(rec: dict[str, str], page: str, metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": _value(rec.get("ID", "")),
        "kernel": rec.get("Kernel Name", "").strip(),
        "block": rec.get("Block Size", "").strip(),
        "grid": rec.get("Grid Size", "").strip(),
        "page": page,
        "metrics": metrics,
        "findings": [],
    }


def _value(text: str) -> int | float | str:
    s = text.strip()
    if not _NUMBER.fullmatch(s):
        return s
    s = s.replace(",", "")
    return int(s) if _INTEGER.fullmatch(s) else float(s)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_document_section(
    launches: Iterable[dict[str, Any]],
    status: str = "ok",
    reason: str = "",
    metrics: Collection[str] | None = None,
) -> dict[str, Any]:
    """The result document's `ncu` section: one entry per kernel, numeric metrics only.

    Launches of the same kernel (raw and details pages alike) are merged: each metric's value
    is the MEDIAN over the launches that reported it, in the unit of the first of them (SI
    prefixes converted, e.g. "us" vs "ns"); findings of the same rule whose descriptions differ
    only in their numbers are merged with the median estimated speedup (the first description
    is kept). Which metrics: those named in `metrics`; by default the fixed set METRICS from raw
    pages (ncu adds ~280 device/launch columns there) and every numeric one from details pages.
    """
    if status not in ("ok", "unavailable", "failed"):
        raise ValueError(f"status must be ok, unavailable or failed, not {status!r}")
    keep = None if metrics is None else set(metrics)
    groups: dict[str, list[dict[str, Any]]] = {}
    for launch in launches:
        if launch.get("kernel"):
            groups.setdefault(launch["kernel"], []).append(launch)
    kernels = [
        {
            "kernel": document_kernel_name(name),
            "metrics": _merge_metrics(group, keep),
            "findings": _merge_findings(group),
        }
        for name, group in groups.items()
    ]
    return {"status": status, "reason": reason[-MAX_REASON:], "kernels": kernels}


def _merge_metrics(group: list[dict[str, Any]], keep: set[str] | None) -> dict[str, Any]:
    seen: dict[str, list[tuple[float, str]]] = {}
    for launch in group:
        for name, metric in launch["metrics"].items():
            default = launch["page"] != "raw" or name in METRICS
            wanted = name in keep if keep is not None else default
            if wanted and _is_number(metric["value"]):
                seen.setdefault(name, []).append((float(metric["value"]), metric["unit"]))
    merged = {}
    for name, values in seen.items():
        unit = values[0][1]
        same = [x for x in (_convert(v, u, unit) for v, u in values) if x is not None]
        merged[name] = {"value": _median(same), "unit": unit}
        if name in METRICS:  # the service shows a metric by the runner's label (METRICS)
            merged[name]["label"] = METRICS[name]
    return merged


def _scale(unit: str) -> tuple[str, float]:
    """("second", 1e-6) for "us": the unit without its SI prefix, and the prefix's factor."""
    head, slash, tail = unit.partition("/")
    if head in _SHORT_TIME:
        return f"second{slash}{tail}", _SHORT_TIME[head]
    if head[:1] in _PREFIXES and head[1:] in _SCALABLE:
        return f"{head[1:]}{slash}{tail}", _PREFIXES[head[:1]]
    return unit, 1.0


def _convert(value: float, unit: str, target: str) -> float | None:
    if unit == target:
        return value
    (base, factor), (target_base, target_factor) = _scale(unit), _scale(target)
    return value * factor / target_factor if base == target_base else None


def _merge_findings(group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    speedups: dict[tuple[str, ...], list[float]] = {}
    for launch in group:
        for finding in launch["findings"]:
            key = (finding["rule"], finding["type"], finding["speedup_type"])
            key += (_DIGITS.sub("#", finding["description"]),)
            merged.setdefault(key, dict(finding))
            speedup = finding["estimated_speedup"]
            if speedup is not None and speedup >= 0:
                speedups.setdefault(key, []).append(speedup)
    for key, finding in merged.items():
        finding["estimated_speedup"] = _median(speedups[key]) if key in speedups else None
    return list(merged.values())


def _median(values: list[float]) -> float:
    return float(f"{statistics.median(values):.12g}")  # 22.12, not 22.119999999999997


_UNAVAILABLE = (
    (re.compile(r"ERR_NVGPUCTRPERM"), "no permission to read the GPU performance counters "
     "(ERR_NVGPUCTRPERM; needs root or NVreg_RestrictProfilingToAdminUsers=0)"),
    (re.compile(r"\bncu: (command )?not found|No such file or directory: '[^']*\bncu'"),
     "ncu (Nsight Compute CLI) not found"),
    (re.compile(r"no kernels were profiled", re.I), "no kernels were profiled (nothing matched "
     "the kernel filter and launch range)"),
    (re.compile(r"not supported on this (device|gpu)|device is not supported|unsupported (gpu|"
                r"device)|Failed to initialize the profiler", re.I),
     "profiling is not supported on this GPU or host"),
)  # fmt: skip


def classify_failure(returncode: int | None, stderr_text: str) -> tuple[str, str]:
    """("unavailable", why) when ncu cannot profile here, ("failed", why) for other errors.

    A zero return code with none of the known problems in the output gives ("ok", "").
    """
    for pattern, why in _UNAVAILABLE:
        if match := pattern.search(stderr_text):
            line = next((ln for ln in stderr_text.splitlines() if match.group(0) in ln), "")
            return "unavailable", f"{why}: {line.strip()}"[:MAX_REASON]
    if returncode == 127:
        return "unavailable", "ncu (Nsight Compute CLI) not found"
    if returncode == 0:
        return "ok", ""
    lines = stderr_text.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("==ERROR==")]
    detail = "\n".join(errors[-10:] or lines[-20:])
    return "failed", f"ncu exited with code {returncode}: {detail}"[:MAX_REASON]

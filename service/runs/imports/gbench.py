"""Google Benchmark's `--benchmark_format=json` (or `--benchmark_out=F.json`) output.

The layout is the one src/json_reporter.cc writes: a "context" (date in RFC 3339, host name,
executable, CPUs, caches, build type) and "benchmarks", one entry per run. An entry of
run_type "iteration" is one repetition: its real_time (time per iteration, in time_unit) is one
sample of the series named by its run_name. Entries of run_type "aggregate" are the statistics
Google Benchmark computed over the repetitions: where the repetitions are in the file, their
mean is checked against the "mean" aggregate (a file whose statistics disagree with its samples
is refused); where only aggregates were written (--benchmark_report_aggregates_only), the
median (else the mean) is the one sample. BigO and RMS aggregates have no time and are left
out, as are counters. A repetition that reported an error fails its series; a skipped one skips
it. A run_name such as "BM_copy<float>/4096/threads:2/real_time" becomes the workload
"BM_copy_float_" with params {"arg0": 4096, "threads": 2, "real_time": true}; the run_name is the
timing's kernel label.
"""

from __future__ import annotations

import math
import os
from datetime import datetime
from typing import Any

from service.runs.imports import (
    ImportedFile,
    ImportedSeries,
    ImportFileError,
    ParamValue,
    fingerprint,
    load_json,
    workload_name,
)

TIME_UNITS = ("ns", "us", "ms", "s")
NO_TIME = frozenset({"BigO", "RMS"})
_MEAN_AGREEMENT = 1e-6  # relative: the file prints 17 significant digits


def _number(text: str) -> ParamValue:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def split_name(run_name: str) -> tuple[str, dict[str, ParamValue]]:
    """The workload name and params of a benchmark's run_name."""
    function, *parts = run_name.split("/")
    params: dict[str, ParamValue] = {}
    positional = 0
    for part in parts:
        key, colon, value = part.partition(":")
        if colon:
            params[key] = _number(value)
        elif isinstance(_number(part), int | float):
            params[f"arg{positional}"] = _number(part)
            positional += 1
        else:  # real_time, manual_time, process_time, ...
            params[part] = True
    return workload_name(function), params


def _time(entry: dict[str, Any], where: str) -> float:
    value = entry.get("real_time")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ImportFileError(f"{where}: real_time is missing or not a number")
    if not math.isfinite(value) or value <= 0:
        raise ImportFileError(f"{where}: real_time {value} is not a positive time")
    return float(value)


def _unit(entry: dict[str, Any], where: str) -> str:
    unit = entry.get("time_unit")
    if unit not in TIME_UNITS:
        raise ImportFileError(f"{where}: time_unit {unit!r} is not one of {', '.join(TIME_UNITS)}")
    return str(unit)


def _environment(context: dict[str, Any]) -> dict[str, Any]:
    cpus = context.get("num_cpus")
    mhz = context.get("mhz_per_cpu")
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        raise ImportFileError("context.num_cpus is missing or not a positive integer")
    caches = context.get("caches") if isinstance(context.get("caches"), list) else []
    identity = {
        "tool": "gbench",
        "num_cpus": cpus,
        "mhz_per_cpu": mhz,
        "caches": caches,
        "build": context.get("library_build_type"),
    }
    return {
        "fingerprint": fingerprint(identity),
        "gpu": {
            "name": f"CPU: {cpus} CPUs at {mhz} MHz",
            "uuid": "",
            "sm_count": cpus,
            "memory_bytes": 0,
            "compute_capability": "",
        },
        "driver_version": "",
        "cuda_runtime_version": "",
        "clocks_mhz": {"cpu": float(mhz)} if isinstance(mhz, int | float) and mhz > 0 else {},
        "throttle_reasons_seen": [],
        "ecc_enabled": None,
        "tool": "gbench",
        "host": {"hostname": str(context.get("host_name", ""))[:300]},
        "gbench": {
            k: context[k]
            for k in ("library_version", "library_build_type", "cpu_scaling_enabled", "caches")
            if k in context
        },
    }


def _started(context: dict[str, Any]) -> datetime | None:
    text = context.get("date")
    if not isinstance(text, str):
        return None
    for parse in (datetime.fromisoformat, lambda t: datetime.strptime(t, "%Y/%m/%d-%H:%M:%S")):
        try:
            when = parse(text)
        except ValueError:
            continue
        return when if when.tzinfo else None  # a local time of no known zone says nothing
    raise ImportFileError(f"context.date {text[:60]!r} is not a date (RFC 3339 expected)")


def parse(data: bytes) -> ImportedFile:
    """The series of one Google Benchmark JSON file."""
    doc = load_json(data, "Google Benchmark")
    if not isinstance(doc, dict) or not isinstance(doc.get("context"), dict):
        raise ImportFileError("not Google Benchmark JSON output: no 'context' object")
    entries = doc.get("benchmarks")
    if not isinstance(entries, list):
        raise ImportFileError("not Google Benchmark JSON output: no 'benchmarks' list")
    context = doc["context"]
    runs: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    aggregates: dict[str, dict[str, tuple[int, dict[str, Any]]]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ImportFileError(f"benchmarks[{i}] is not an object")
        name = entry.get("run_name", entry.get("name"))
        if not isinstance(name, str) or not name.strip():
            raise ImportFileError(f"benchmarks[{i}] has no run_name")
        kind = entry.get("run_type", "aggregate" if "aggregate_name" in entry else "iteration")
        if kind == "aggregate":
            aggregates.setdefault(name, {})[str(entry.get("aggregate_name", ""))] = (i, entry)
        elif kind == "iteration":
            runs.setdefault(name, []).append((i, entry))
        else:
            raise ImportFileError(f"benchmarks[{i}]: run_type {kind!r} is not iteration/aggregate")
    # A complexity fit's BigO and RMS rows name the family, not a run: nothing to time.
    names = [n for n in dict.fromkeys([*runs, *aggregates])
             if n in runs or set(aggregates[n]) - NO_TIME]  # fmt: skip
    series = [_series(name, runs.get(name, []), aggregates.get(name, {})) for name in names]
    if not series:
        raise ImportFileError("the file holds no benchmarks")
    seen: dict[tuple[str, str], str] = {}
    for s in series:
        key = (s.name, repr(sorted(s.params.items())))
        if key in seen:
            raise ImportFileError(
                f"benchmarks {seen[key]!r} and {s.kernel!r} both read as workload {s.name} "
                f"{dict(s.params)}: rename one"
            )
        seen[key] = s.kernel
    executable = os.path.basename(str(context.get("executable", ""))) or "benchmarks"
    return ImportedFile(
        tool="gbench",
        suite=f"gbench:{workload_name(executable)}"[:200],
        environment=_environment(context),
        series=series,
        started_at=_started(context),
    )


def _series(
    run_name: str,
    repetitions: list[tuple[int, dict[str, Any]]],
    aggregates: dict[str, tuple[int, dict[str, Any]]],
) -> ImportedSeries:
    name, params = split_name(run_name)
    out = ImportedSeries(name=name, params=params, samples=[], kernel=run_name[:1000])
    for _, entry in repetitions:
        if entry.get("error_occurred"):
            out.status, out.error = "failed", str(entry.get("error_message", "error"))
            return out
        if entry.get("skipped"):
            out.status, out.error = "skipped", str(entry.get("skip_message", "skipped"))
            return out
    if repetitions:
        units = {_unit(e, f"benchmarks[{i}]") for i, e in repetitions}
        if len(units) > 1:
            raise ImportFileError(f"{run_name}: repetitions in several time units {sorted(units)}")
        out.unit = units.pop()
        out.samples = [_time(e, f"benchmarks[{i}]") for i, e in repetitions]
        out.note = f"Google Benchmark real_time of {len(out.samples)} repetition(s)"
        if "mean" in aggregates:
            i, mean = aggregates["mean"]
            stated = _time(mean, f"benchmarks[{i}]")
            if _unit(mean, f"benchmarks[{i}]") == out.unit:
                ours = sum(out.samples) / len(out.samples)
                if abs(stated - ours) > _MEAN_AGREEMENT * ours:
                    raise ImportFileError(
                        f"benchmarks[{i}]: the mean of {run_name} says {stated:g} {out.unit}, "
                        f"its repetitions average {ours:g}: the file was altered or truncated"
                    )
        return out
    chosen = next((a for a in ("median", "mean") if a in aggregates), None)
    if chosen is None:
        raise ImportFileError(f"{run_name}: no repetitions and no median or mean aggregate")
    i, entry = aggregates[chosen]
    if entry.get("error_occurred"):
        out.status, out.error = "failed", str(entry.get("error_message", "error"))
        return out
    out.unit = _unit(entry, f"benchmarks[{i}]")
    out.samples = [_time(entry, f"benchmarks[{i}]")]
    count = entry.get("repetitions")
    out.note = f"Google Benchmark aggregates only: the {chosen} of {count} repetitions"
    return out

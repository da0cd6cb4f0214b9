"""Reader of nvbench's JSON output (`--json FILE`, with its `--jsonbin` sample files where given).

The layout is json_printer's: "meta" (argv, version), "devices", and "benchmarks", each with
"states" whose "axis_values" and summary "data" entries are {name, type, value} with the value
written as a string (a JSON number would lose int64 precision). nvbench writes `null` for a list
it has nothing to put in (no axes, a skipped state's summaries), so null reads as empty there.
Times are in seconds; kernelwatch gets them in microseconds.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
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

GPU_MEAN = "nv/cold/time/gpu/mean"
SAMPLE_SIZE = "nv/cold/sample_size"
SAMPLE_FILE = "nv/json/bin:nv/cold/sample_times"
_FLOAT32 = struct.Struct("<f")  # --jsonbin's element: little-endian float32 seconds
_US_PER_S = 1e6


def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ImportFileError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def _list(holder: dict[str, Any], key: str, where: str) -> list[Any]:
    """holder[key] as a list; a missing key is malformed, null (where nvbench writes it) is []."""
    if key not in holder:
        raise ImportFileError(f"{where}: no '{key}'")
    value = holder[key]
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFileError(f"{where}.{key}: expected a list, found {type(value).__name__}")
    return value


def _int(value: Any, where: str) -> int:
    # nvbench's own fields are JSON numbers, its named values strings: take either.
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ImportFileError(f"{where}: {value!r} is not an integer")


def _float(value: Any, where: str) -> float:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    raise ImportFileError(f"{where}: {value!r} is not a finite number")


def _named_values(items: list[Any], where: str) -> dict[str, ParamValue]:
    """A {name, type, value} list (write_named_values) as name -> typed value."""
    values: dict[str, ParamValue] = {}
    for k, raw in enumerate(items):
        item = _obj(raw, f"{where}[{k}]")
        name, kind, value = item.get("name"), item.get("type"), item.get("value")
        if not isinstance(name, str) or not name:
            raise ImportFileError(f"{where}[{k}]: no name")
        at = f"{where}[{k}] '{name}'"
        if kind == "int64":
            values[name] = _int(value, at)
        elif kind == "float64":
            values[name] = _float(value, at)
        elif kind == "string" and isinstance(value, str):
            values[name] = value
        elif kind == "string":
            raise ImportFileError(f"{at}: {value!r} is not a string")
        else:
            raise ImportFileError(f"{at}: unknown value type {kind!r}")
    return values


Summaries = dict[str, tuple[str, list[Any]]]


def _summaries(state: dict[str, Any], where: str) -> Summaries:
    """The state's summaries as tag -> (location, raw data list); data is read when needed."""
    found: Summaries = {}
    for k, raw in enumerate(_list(state, "summaries", where)):
        at = f"{where}.summaries[{k}]"
        summary = _obj(raw, at)
        tag = summary.get("tag")
        if not isinstance(tag, str) or not tag:
            raise ImportFileError(f"{at}: no tag")
        # A summary with only name/hint/description (a failed --jsonbin write) has no "data".
        found.setdefault(tag, (at, _list(summary, "data", at) if "data" in summary else []))
    return found


def _data(summaries: Summaries, tag: str) -> tuple[str, dict[str, ParamValue]]:
    at, data = summaries.get(tag, ("", []))
    return at, _named_values(data, f"{at}.data")


def _environment(root: dict[str, Any], device_ids: list[int]) -> tuple[dict[str, Any], set[int]]:
    """The environment section for the device the states ran on, and the ids the file lists."""
    devices = [_obj(d, f"devices[{k}]") for k, d in enumerate(_list(root, "devices", "file"))]
    if not devices:
        raise ImportFileError("file: 'devices' is empty; nvbench lists the GPUs it ran on")
    ids = {_int(d.get("id"), f"devices[{k}].id"): k for k, d in enumerate(devices)}
    k = next((ids[i] for i in device_ids if i in ids), 0)
    device, at = devices[k], f"devices[{k}]"
    name = device.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ImportFileError(f"{at}: no name")
    sm_count = _int(device.get("number_of_sms"), f"{at}.number_of_sms")
    memory = _int(device.get("global_memory_size"), f"{at}.global_memory_size")
    sm_version = _int(device.get("sm_version"), f"{at}.sm_version")
    if sm_count <= 0 or memory < 0 or sm_version <= 0:
        raise ImportFileError(f"{at}: number_of_sms, sm_version must be > 0, memory size >= 0")
    ecc = device.get("ecc_state")
    # sm_version is major * 100 + minor * 10 (device_info::get_sm_version).
    gpu = {"name": name.strip(), "sm_count": sm_count, "memory_bytes": memory}
    gpu["compute_capability"] = f"{sm_version // 100}.{sm_version % 100 // 10}"
    identity = {**gpu, "tool": "nvbench"}
    environment: dict[str, Any] = {
        "fingerprint": fingerprint(identity),
        "gpu": {**gpu, "uuid": ""},
        "driver_version": "",
        "cuda_runtime_version": "",
        "clocks_mhz": {},
        "throttle_reasons_seen": [],
        "ecc_enabled": ecc if isinstance(ecc, bool) else None,
        "tool": "nvbench",
    }
    meta = root.get("meta")
    version = meta.get("version") if isinstance(meta, dict) else None
    nvb = version.get("nvbench") if isinstance(version, dict) else None
    if isinstance(nvb, dict) and isinstance(nvb.get("string"), str):
        environment["nvbench_version"] = nvb["string"]
    return environment, set(ids)


def _suite(root: dict[str, Any]) -> str:
    meta = root.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise ImportFileError(f"meta: expected an object, found {type(meta).__name__}")
    argv = (meta or {}).get("argv")
    program = argv[0] if isinstance(argv, list) and argv and isinstance(argv[0], str) else ""
    program = program.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()
    return f"nvbench:{program or 'nvbench'}"[:200]


def _samples(
    summaries: Summaries,
    sample_files: Mapping[str, bytes],
    where: str,
) -> tuple[list[float], str]:
    """The state's cold GPU times in microseconds, and where they come from."""
    at, data = _data(summaries, SAMPLE_FILE)
    filename = data.get("filename")
    # nvbench leaves out filename and size where writing the file failed.
    if isinstance(filename, str) and filename in sample_files:
        size = _int(data.get("size"), f"{at} 'size'")
        payload = sample_files[filename]
        if size <= 0 or len(payload) != size * _FLOAT32.size:
            raise ImportFileError(
                f"{where}: sample file {filename!r} has {len(payload)} bytes, but the summary "
                f"declares {size} float32 samples ({size * _FLOAT32.size} bytes)"
            )
        samples = [seconds * _US_PER_S for (seconds,) in _FLOAT32.iter_unpack(payload)]
        return samples, f"nvbench cold samples from {filename}"
    at, data = _data(summaries, GPU_MEAN)
    if "value" not in data:
        raise ImportFileError(f"{at}: summary '{GPU_MEAN}' has no value")
    mean = _float(data["value"], f"{at} '{GPU_MEAN}'")
    at, data = _data(summaries, SAMPLE_SIZE)
    count = f"{_int(data['value'], f'{at} {SAMPLE_SIZE!r}')} " if "value" in data else ""
    return [mean * _US_PER_S], f"nvbench summary: mean of {count}cold samples (no sample file)"


def _series(
    bench: str, state: dict[str, Any], files: Mapping[str, bytes], where: str
) -> ImportedSeries:
    params = _named_values(_list(state, "axis_values", where), f"{where}.axis_values")
    summaries = _summaries(state, where)
    imported = ImportedSeries(workload_name(bench), params, [], unit="us", method="cuda_events")
    skipped = state.get("is_skipped", False)
    if not isinstance(skipped, bool):
        raise ImportFileError(f"{where}.is_skipped: {skipped!r} is not true or false")
    if skipped:
        reason = state.get("skip_reason")
        imported.status, imported.error = "skipped", reason if isinstance(reason, str) else ""
    elif GPU_MEAN not in summaries:
        imported.status = "failed"
        imported.error = f"nvbench recorded no cold GPU time ('{GPU_MEAN}' summary missing)"
    else:
        imported.samples, imported.note = _samples(summaries, files, where)
        for sample in imported.samples:
            if not (math.isfinite(sample) and sample > 0):
                label = f"{bench} {state.get('name', '')}".strip()
                raise ImportFileError(f"{where} ({label}): sample {sample!r} us is not > 0")
    return imported


def parse(data: bytes, sample_files: Mapping[str, bytes] | None = None) -> ImportedFile:
    """An ImportedFile of nvbench's `--json` output; sample_files keyed by their JSON filename."""
    root = load_json(data, "nvbench")
    if not isinstance(root, dict):
        raise ImportFileError(f"not nvbench JSON output: a {type(root).__name__}, not an object")
    if not isinstance(root.get("benchmarks"), list):
        raise ImportFileError("not nvbench JSON output: no 'benchmarks' list")
    suite, files = _suite(root), sample_files or {}
    found: list[tuple[ImportedSeries, int | None, str]] = []
    for b, raw_bench in enumerate(root["benchmarks"]):
        bench = _obj(raw_bench, f"benchmarks[{b}]")
        name = bench.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ImportFileError(f"benchmarks[{b}]: no name")
        for s, raw_state in enumerate(_list(bench, "states", f"benchmarks[{b}]")):
            where = f"benchmarks[{b}].states[{s}]"
            state = _obj(raw_state, where)
            device = _int(state["device"], f"{where}.device") if "device" in state else None
            found.append((_series(name, state, files, where), device, where))
    used = list(dict.fromkeys(d for _, d, _ in found if d is not None))
    environment, listed = _environment(root, used)
    seen: dict[str, str] = {}
    for series, device, where in found:
        if device is not None and device not in listed:
            raise ImportFileError(f"{where}.device: {device} is not in 'devices'")
        if len(used) > 1:  # only then does the device tell series apart
            if "device" in series.params:
                raise ImportFileError(f"{where}: axis 'device' clashes with the device id")
            series.params["device"] = device if device is not None else ""
        key = repr((series.name, sorted(series.params.items())))
        if key in seen:
            raise ImportFileError(
                f"{seen[key]} and {where}: same workload {series.name!r} and params {series.params}"
            )
        seen[key] = where
    return ImportedFile("nvbench", suite, environment, [s for s, _, _ in found])

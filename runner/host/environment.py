"""The runner's environment, and the fingerprint of what makes two results comparable."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
from collections.abc import Iterable
from typing import Any

from runner.host import gpuinfo
from runner.host.tools import find_ncu, find_nvcc

# The frameworks a suite may launch its work with (PyTorch ops and extensions, Triton kernels),
# by the distributions that carry them: their versions go into every run's environment (an
# upgrade keeps the series, and the service names it beside an alert's causes).
FRAMEWORKS = {"torch": ("torch",), "triton": ("triton", "pytorch-triton")}


def framework_versions() -> dict[str, str]:
    """Name -> version of each installed framework, from its package's metadata (nothing is
    imported: a runner must not pay for importing torch)."""
    out = {}
    for name, distributions in FRAMEWORKS.items():
        for distribution in distributions:
            try:
                out[name] = importlib.metadata.version(distribution)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return out


def _tool_version(command: list[str]) -> str | None:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.findall(r"(?:release |V|Version )(\d+(?:\.\d+)+)", out)
    return found[-1] if found else (out.strip().splitlines()[-1] if out.strip() else None)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _nvml_string(fn: str, size: int = 96) -> str | None:
    lib, handle = gpuinfo._nvml(), gpuinfo._handle()
    if lib is None or handle is None:
        return None
    buffer = ctypes.create_string_buffer(size)
    if getattr(lib, fn)(handle, buffer, size) != 0:
        return None
    return buffer.value.decode()


def _nvml_driver() -> str | None:
    lib = gpuinfo._nvml()
    if lib is None:
        return None
    buffer = ctypes.create_string_buffer(96)
    return buffer.value.decode() if lib.nvmlSystemGetDriverVersion(buffer, 96) == 0 else None


def _nvml_pair(fn: str) -> tuple[int, int] | None:
    lib, handle = gpuinfo._nvml(), gpuinfo._handle()
    if lib is None or handle is None:
        return None
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    if getattr(lib, fn)(handle, ctypes.byref(current), ctypes.byref(pending)) != 0:
        return None
    return current.value, pending.value


def collect(device: str, gpu: dict[str, Any]) -> dict[str, Any]:
    """Environment section of the result document; `gpu` is what the worker read from CUDA."""
    host = {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpus": str(os.cpu_count() or 0),
    }
    if device == "cpu":
        gpu_section = {
            "name": f"CPU: {host['cpu']}",
            "uuid": "",
            "sm_count": os.cpu_count() or 1,
            "memory_bytes": _memory_bytes(),
            "compute_capability": "",
        }
        env: dict[str, Any] = {
            "gpu": gpu_section,
            "driver_version": "",
            "cuda_runtime_version": "",
            "clocks_mhz": {},
            "throttle_reasons_seen": [],
            "ecc_enabled": None,
        }
    else:
        gpuinfo.bind(gpu.get("pci_bus_id"))
        ecc = _nvml_pair("nvmlDeviceGetEccMode")
        mig = _nvml_pair("nvmlDeviceGetMigMode")
        clocks = {
            k: float(v)
            for k, v in {
                "sm_max": gpuinfo._uint("nvmlDeviceGetMaxClockInfo", gpuinfo.NVML_CLOCK_SM),
                "mem_max": gpuinfo._uint("nvmlDeviceGetMaxClockInfo", gpuinfo.NVML_CLOCK_MEM),
                "sm_now": gpuinfo.sm_clock_mhz(),
            }.items()
            if v is not None
        }
        env = {
            "gpu": {
                "name": gpu.get("name", "unknown GPU"),
                "uuid": _nvml_string("nvmlDeviceGetUUID") or "",
                "sm_count": int(gpu.get("sm_count", 1)),
                "memory_bytes": int(gpu.get("memory_bytes", 0)),
                "compute_capability": gpu.get("compute_capability", ""),
            },
            "driver_version": _nvml_driver() or gpu.get("cuda_driver_version", ""),
            "cuda_runtime_version": gpu.get("cuda_runtime_version", ""),
            "cupy_version": gpu.get("cupy_version", ""),
            "nvcc_version": _tool_version([find_nvcc() or "nvcc", "--version"]),
            "ncu_version": _tool_version([find_ncu() or "ncu", "--version"]),
            "clocks_mhz": clocks,
            "throttle_reasons_seen": [r for r in gpuinfo.throttle_reasons() if r != "gpu_idle"],
            "ecc_enabled": bool(ecc[0]) if ecc else None,
            "mig_mode": ("enabled" if mig[0] else "disabled") if mig else "unsupported",
            "l2_bytes": gpu.get("l2_bytes"),
        }
    env["host"] = host
    env["frameworks"] = framework_versions()
    env["fingerprint"] = fingerprint(device, env)
    return env


THROTTLE_KEY = "throttle_during_timing"  # a free-form environment fact (the schema allows them)


def note_timings(env: dict[str, Any], records: Iterable[Any]) -> None:
    """Add what the timing processes saw to the environment: the lowest and highest SM clock
    (clocks_mhz sm_seen_min/sm_seen_max), every throttle reason (throttle_reasons_seen: the
    reasons read during the samples and those whose NVML violation counter advanced across a
    workload's samples) and, where a counter advanced, how much (`throttle_during_timing`):

        {"source": ..., "violation_ms": {reason: total ms},
         "workloads": {id: [{"process": i, "window_ms": ms, "violation_ms": {reason: ms}}]}}

    (only the workloads and processes that were throttled; the per-process documents' timing
    `throttle_reasons` name the reasons, the service schema has no field for the amounts)."""
    clocks: list[float] = []
    reasons = set(env.get("throttle_reasons_seen", []))
    totals: dict[str, float] = {}
    throttled: dict[str, list[dict[str, Any]]] = {}
    counted = False
    for record in records:
        for index, outcome in enumerate(record.timings):
            result = outcome.result if outcome.status == "ok" else None
            if not result:
                continue
            for key in ("sm_clock_min_mhz", "sm_clock_mhz", "sm_clock_max_mhz"):
                if result.get(key) is not None:
                    clocks.append(float(result[key]))
            reasons.update(result.get("throttle_reasons", []))
            violation = result.get("violation_ms") or {}
            counted = counted or bool(violation)
            if any(ms > 0 for ms in violation.values()):
                for name, ms in violation.items():
                    totals[name] = round(totals.get(name, 0.0) + ms, 3)
                throttled.setdefault(record.info["id"], []).append(
                    {"process": index, "window_ms": result.get("window_ms"),
                     "violation_ms": {k: v for k, v in violation.items() if v > 0}}
                )  # fmt: skip
    if clocks:
        env.setdefault("clocks_mhz", {}).update(sm_seen_min=min(clocks), sm_seen_max=max(clocks))
    env["throttle_reasons_seen"] = sorted(reasons)
    if counted:
        env[THROTTLE_KEY] = {
            "source": "NVML violation counters (nvmlDeviceGetViolationStatus), read before and "
            "after each workload's samples in each timing process",
            "violation_ms": totals,
            "workloads": throttled,
        }


def fingerprint(device: str, env: dict[str, Any]) -> str:
    """Results compare only within one fingerprint: same device model and software stack.

    The host name, UUID and clocks seen are left out on purpose: two identical cards in two
    hosts are one series; a driver or CUDA upgrade starts a new one.
    """
    gpu = env["gpu"]
    identity = {
        "device": device,
        "gpu": gpu["name"],
        "sms": gpu["sm_count"],
        "memory_gib": round(gpu["memory_bytes"] / 2**30),
        "cc": gpu["compute_capability"],
        "driver": env.get("driver_version", ""),
        "cuda": env.get("cuda_runtime_version", ""),
        "ecc": env.get("ecc_enabled"),
        "mig": env.get("mig_mode"),
    }
    if device == "cpu":
        identity["python"] = env["host"]["python"].rsplit(".", 1)[0]
    text = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

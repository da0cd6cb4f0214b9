"""runner.host.environment: a run's environment section and the fingerprint within which results
compare. The fingerprint is the device model and software stack (driver, CUDA, ECC, MIG, memory
in whole GiB; Python's minor version on a CPU) and leaves out what differs between identical
hosts (name, UUID, clocks, throttling, frameworks). A CPU host's section, a CUDA host's read
from the worker where NVML cannot tell, what the timing processes saw (clocks, throttle reasons
and violation amounts), and tool versions read from `--version` output."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from runner.host import environment, gpuinfo
from runner.measure.phase import Outcome
from runner.run.report import WorkloadRecord

H100 = {
    "gpu": {
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-1",
        "sm_count": 132,
        "memory_bytes": 85_520_809_984,
        "compute_capability": "9.0",
    },
    "driver_version": "580.65.06",
    "cuda_runtime_version": "13.0",
    "ecc_enabled": True,
    "mig_mode": "disabled",
    "clocks_mhz": {"sm_max": 1980.0, "sm_now": 1755.0},
    "throttle_reasons_seen": [],
    "host": {"hostname": "gpu-a", "python": "3.12.3"},
    "frameworks": {"torch": "2.9.0"},
}


def changed(env: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(env)
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target[key]
    target[last] = value
    return out


def test_a_fingerprint_is_sixteen_hex_digits_of_the_stack() -> None:
    print_ = environment.fingerprint("cuda", H100)
    assert len(print_) == 16 and int(print_, 16) >= 0
    assert environment.fingerprint("cpu", H100) != print_  # the device kind is part of it


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("host.hostname", "gpu-b"),
        ("gpu.uuid", "GPU-2"),
        ("clocks_mhz", {"sm_now": 1410.0}),
        ("throttle_reasons_seen", ["sw_power_cap"]),
        ("frameworks", {"torch": "2.10.0"}),
        ("host.python", "3.13.1"),
        ("gpu.memory_bytes", 85_520_809_984 - (50 << 20)),
    ],
)
def test_two_identical_cards_in_two_hosts_are_one_series(path: str, value: Any) -> None:
    assert environment.fingerprint("cuda", changed(H100, path, value)) == (
        environment.fingerprint("cuda", H100)
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("driver_version", "580.82.07"),
        ("cuda_runtime_version", "13.1"),
        ("ecc_enabled", False),
        ("mig_mode", "enabled"),
        ("gpu.compute_capability", "9.0a"),
        ("gpu.sm_count", 114),
        ("gpu.name", "NVIDIA H100 PCIe"),
        ("gpu.memory_bytes", 94 << 30),
    ],
)
def test_a_driver_cuda_or_card_change_starts_a_new_series(path: str, value: Any) -> None:
    assert environment.fingerprint("cuda", changed(H100, path, value)) != (
        environment.fingerprint("cuda", H100)
    )


def test_a_cpu_series_follows_pythons_minor_version_not_its_patch() -> None:
    cpu = environment.fingerprint("cpu", H100)
    assert environment.fingerprint("cpu", changed(H100, "host.python", "3.12.11")) == cpu
    assert environment.fingerprint("cpu", changed(H100, "host.python", "3.13.0")) != cpu


def test_a_cpu_hosts_section_names_its_processor_and_has_no_gpu_stack() -> None:
    env = environment.collect("cpu", {})
    assert env["gpu"]["name"] == f"CPU: {env['host']['cpu']}"
    assert env["gpu"]["sm_count"] == (os.cpu_count() or 1)
    assert env["gpu"]["memory_bytes"] > 0
    assert (env["driver_version"], env["cuda_runtime_version"], env["ecc_enabled"]) == (
        "",
        "",
        None,
    )
    assert env["host"]["cpus"] == str(os.cpu_count())
    assert env["fingerprint"] == environment.fingerprint("cpu", env)
    assert environment.collect("cpu", {})["fingerprint"] == env["fingerprint"]


def test_without_nvml_a_cuda_section_is_what_the_worker_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML (libnvidia-ml) is made absent, as on a host whose driver library cannot load."""
    monkeypatch.setattr(gpuinfo, "_nvml", lambda: None)
    worker = {
        "name": "NVIDIA H200",
        "sm_count": 132,
        "memory_bytes": 150 << 30,
        "compute_capability": "9.0",
        "cuda_driver_version": "13000",
        "cuda_runtime_version": "12080",
        "cupy_version": "13.6.0",
        "l2_bytes": 60 << 20,
    }
    env = environment.collect("cuda", worker)
    assert env["gpu"] == {
        "name": "NVIDIA H200",
        "uuid": "",
        "sm_count": 132,
        "memory_bytes": 150 << 30,
        "compute_capability": "9.0",
    }
    assert env["driver_version"] == "13000"  # NVML's driver string where it can tell
    assert (env["ecc_enabled"], env["mig_mode"]) == (None, "unsupported")
    assert (env["clocks_mhz"], env["throttle_reasons_seen"]) == ({}, [])
    assert (env["cupy_version"], env["l2_bytes"]) == ("13.6.0", 60 << 20)


def record(wid: str, *timings: Outcome) -> WorkloadRecord:
    return WorkloadRecord(info={"id": wid}, timings=list(timings))


def ok(**result: Any) -> Outcome:
    return Outcome("ok", result={"samples": [1.0], **result})


def test_timings_add_the_clocks_seen_and_every_reason_to_those_already_seen() -> None:
    env: dict[str, Any] = {
        "clocks_mhz": {"sm_max": 1980.0},
        "throttle_reasons_seen": ["hw_slowdown"],
    }
    gemm = record(
        "gemm[n=1]",
        ok(sm_clock_min_mhz=1500.0, sm_clock_mhz=1900.0, throttle_reasons=["sw_power_cap"]),
        Outcome("crashed", result={"sm_clock_mhz": 100.0}),
        ok(sm_clock_max_mhz=1995.0),
    )
    environment.note_timings(env, [gemm, record("copy[n=1]", Outcome("timeout"))])
    assert env["clocks_mhz"] == {"sm_max": 1980.0, "sm_seen_min": 1500.0, "sm_seen_max": 1995.0}
    assert env["throttle_reasons_seen"] == ["hw_slowdown", "sw_power_cap"]
    assert environment.THROTTLE_KEY not in env  # no counters were read


def test_counters_read_but_never_advanced_say_never_throttled() -> None:
    """Counted and zero is not "not counted": the section is there, with nothing in it."""
    env: dict[str, Any] = {}
    environment.note_timings(env, [record("a[n=1]", ok(violation_ms={"sw_power_cap": 0.0}))])
    section = env[environment.THROTTLE_KEY]
    assert (section["violation_ms"], section["workloads"]) == ({}, {})
    assert "nvmlDeviceGetViolationStatus" in section["source"]
    assert "clocks_mhz" not in env and env["throttle_reasons_seen"] == []


def test_amounts_add_up_over_processes_and_name_each_throttled_process_by_position() -> None:
    env: dict[str, Any] = {}
    gemm = record(
        "gemm[n=1]",
        Outcome("crashed"),
        ok(violation_ms={"sw_power_cap": 10.25, "thermal_slowdown": 0.0}, window_ms=900.0),
        ok(violation_ms={"sw_power_cap": 0.5}, window_ms=800.0),
    )
    environment.note_timings(env, [gemm])
    section = env[environment.THROTTLE_KEY]
    assert section["violation_ms"] == {"sw_power_cap": 10.75, "thermal_slowdown": 0.0}
    assert section["workloads"] == {
        "gemm[n=1]": [
            {"process": 1, "window_ms": 900.0, "violation_ms": {"sw_power_cap": 10.25}},
            {"process": 2, "window_ms": 800.0, "violation_ms": {"sw_power_cap": 0.5}},
        ]
    }


def tool(tmp_path: Path, text: str) -> list[str]:
    script = tmp_path / "tool"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\n")
    script.chmod(0o755)
    return [str(script), "--version"]


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, "
            "V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0",
            "13.0.88",
        ),
        (
            "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA\n"
            "Version 2025.3.1.0 (build 36398880) (public-release)",
            "2025.3.1.0",
        ),
        ("some tool\nbuilt today\n", "built today"),  # no version: its last line
    ],
    ids=["nvcc", "ncu", "unknown"],
)
def test_a_tools_version_is_read_from_its_version_output(
    tmp_path: Path, text: str, version: str
) -> None:
    assert environment._tool_version(tool(tmp_path, text)) == version


def test_a_tool_that_is_not_there_or_says_nothing_has_no_version(tmp_path: Path) -> None:
    assert environment._tool_version([str(tmp_path / "no-such-nvcc"), "--version"]) is None
    assert environment._tool_version(tool(tmp_path, "")) is None

"""Throttling across the samples (CPU only, NVML stood in for): the violation counters read
before and after a workload's samples, their reasons in the timing's `throttle_reasons`, the
amounts in the environment's free-form `throttle_during_timing`, and the cost table's column."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

from benchmarks.runner_cost import throttle, workload_id
from runner.host import environment, gpuinfo
from runner.measure.phase import Outcome
from runner.run.report import WorkloadRecord, timing_section


class FakeNvml:
    """nvmlDeviceGetViolationStatus of a GPU that counts power and thermal only."""

    def __init__(self) -> None:
        self.ns = {0: 5_000_000, 1: 0}

    def nvmlDeviceGetViolationStatus(self, handle: Any, policy: Any, out: Any) -> int:
        value = out._obj
        policy = policy.value
        if policy not in self.ns:
            return 3  # NVML_ERROR_NOT_SUPPORTED
        value.referenceTime, value.violationTime = 1, self.ns[policy]
        return 0


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    fake = FakeNvml()
    monkeypatch.setattr(gpuinfo, "_nvml", lambda: fake)
    monkeypatch.setattr(gpuinfo, "_handle", lambda index=0: ctypes.c_void_p(1))
    return fake


def test_violation_counters_leave_out_what_the_gpu_does_not_count(nvml: FakeNvml) -> None:
    assert gpuinfo.violation_ns() == {"sw_power_cap": 5_000_000, "thermal_slowdown": 0}


def test_violation_delta_in_ms_and_never_negative() -> None:
    before = {"sw_power_cap": 1_000_000, "thermal_slowdown": 5_000_000, "board_limit": 0}
    after = {"sw_power_cap": 13_500_000, "thermal_slowdown": 4_000_000}
    assert gpuinfo.violation_delta_ms(before, after) == {
        "sw_power_cap": 12.5,
        "thermal_slowdown": 0.0,
    }


def test_a_power_cap_between_two_readings_of_the_reasons_is_still_seen(
    nvml: FakeNvml, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpuinfo, "sm_clock_mhz", lambda: 1980.0)
    monkeypatch.setattr(gpuinfo, "throttle_reasons", lambda: ["gpu_idle"])  # never the cap
    watch = gpuinfo.ClockWatch(enabled=True)
    watch.start()
    for _ in range(20):
        watch.during()
    nvml.ns[0] += 250_000_000  # 250 ms of power capping while the samples ran
    watch.stop()
    result = watch.result()
    assert result["throttle_reasons"] == ["sw_power_cap"]
    assert result["violation_ms"] == {"sw_power_cap": 250.0, "thermal_slowdown": 0.0}
    assert result["window_ms"] >= 0 and result["sm_clock_mhz"] == 1980.0
    watch.start()  # the next workload starts from the counters' new values
    assert watch.result()["throttle_reasons"] == []


def test_without_nvml_the_watch_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpuinfo, "_nvml", lambda: None)
    watch = gpuinfo.ClockWatch(enabled=True)
    watch.start()
    watch.during()
    watch.stop()
    assert watch.result() == {"sm_clock_mhz": None, "sm_clock_min_mhz": None,
                              "sm_clock_max_mhz": None, "throttle_reasons": []}  # fmt: skip
    assert gpuinfo.violation_ns() == {} and gpuinfo.compute_mode() is None


def _record(wid: str, *violations: dict[str, float]) -> WorkloadRecord:
    info = {"id": wid, "name": wid.split("[")[0], "params": {"n": 1}, "kernels": ["k"]}
    record = WorkloadRecord(info=info)
    for v in violations:
        reasons = sorted(k for k, ms in v.items() if ms > 0)
        result = {"samples": [10.0, 11.0], "method": "cuda_events", "l2_flushed": True,
                  "stop_reason": "x", "sm_clock_mhz": 1980.0, "sm_clock_min_mhz": 1890.0,
                  "sm_clock_max_mhz": 1980.0, "throttle_reasons": reasons,
                  "violation_ms": v, "window_ms": 800.0}  # fmt: skip
        record.timings.append(Outcome("ok", result=result))
    return record


def test_the_environment_carries_the_amounts_and_the_timing_the_reasons() -> None:
    capped = _record("gemm[n=1]", {"sw_power_cap": 0.0}, {"sw_power_cap": 120.5})
    calm = _record("copy[n=1]", {"sw_power_cap": 0.0}, {"sw_power_cap": 0.0})
    env: dict[str, Any] = {"throttle_reasons_seen": [], "clocks_mhz": {}}
    environment.note_timings(env, [capped, calm])
    assert env["throttle_reasons_seen"] == ["sw_power_cap"]
    assert env["clocks_mhz"] == {"sm_seen_min": 1890.0, "sm_seen_max": 1980.0}
    seen = env[environment.THROTTLE_KEY]
    assert seen["violation_ms"] == {"sw_power_cap": 120.5}
    assert seen["workloads"] == {
        "gemm[n=1]": [{"process": 1, "window_ms": 800.0, "violation_ms": {"sw_power_cap": 120.5}}]
    }
    section = timing_section(capped.info, capped.timings)
    assert section is not None
    assert [p["throttle_reasons"] for p in section["processes"]] == [[], ["sw_power_cap"]]
    assert set(section["processes"][0]) == {"samples", "sm_clock_mhz", "throttle_reasons"}


def test_no_counters_no_throttle_section() -> None:
    env: dict[str, Any] = {"throttle_reasons_seen": ["hw_slowdown"]}
    environment.note_timings(env, [_record("a[n=1]")])
    assert environment.THROTTLE_KEY not in env and env["throttle_reasons_seen"] == ["hw_slowdown"]


def test_the_cost_table_names_the_throttle_of_each_run() -> None:
    w = {"name": "adamw", "params": {"sizes": [1001, 64]},
         "timing": {"processes": [{"throttle_reasons": ["sw_power_cap"]}]}}  # fmt: skip
    assert workload_id(w) == "adamw[sizes=1001x64]"
    env = {environment.THROTTLE_KEY: {"workloads": {"adamw[sizes=1001x64]": [
        {"process": 0, "violation_ms": {"sw_power_cap": 40.2}},
        {"process": 2, "violation_ms": {"sw_power_cap": 10.0}}]}}}  # fmt: skip
    assert throttle({"environment": env}, w) == "sw_power_cap 50 ms"
    assert throttle({"environment": {}}, w) == "sw_power_cap"
    assert throttle({"environment": {}}, None) == "-"


def test_throttled_since_names_only_power_and_thermal(nvml: FakeNvml) -> None:
    watch = gpuinfo.ClockWatch(enabled=True)
    mark = watch.counters()
    assert watch.throttled_since(mark) == []
    nvml.ns[0] += 1_000_000
    nvml.ns[1] += 2_000_000
    assert watch.throttled_since(mark) == ["sw_power_cap", "thermal_slowdown"]
    assert gpuinfo.ClockWatch(enabled=False).throttled_since({}) == []


def test_a_throttled_launch_is_sampled_over_a_minimum_span() -> None:
    from runner.measure.sampling import collect
    from runner.suite.load import Timing

    now = [0.0]

    def clock() -> float:
        return now[0]

    def sample() -> float:
        now[0] += 0.001  # 1 ms per sample, every sample alike: the spread is 0 at once
        return 100.0

    timing = Timing(min_samples=10, max_seconds=5.0)
    quick, _ = collect(sample, timing, clock)
    assert len(quick) == 10
    now[0] = 0.0
    spanned, reason = collect(sample, timing, clock, min_seconds=0.2)
    assert 200 <= len(spanned) <= 206 and "relative spread" in reason

"""runner.host.gpuinfo: read-only GPU facts through NVML. Which GPU is read (the bound PCI bus
id, CUDA's device 0, else NVML's index 0), the clock-event mask decoded into reason names (the
name a pre-535 driver exports used where the new one is missing), violation counters turned
into milliseconds, and what a ClockWatch makes of one workload's samples (every n-th sample
read, idle never a throttle, the median clock). libnvidia-ml is stood in for by a small class
with the same C functions, filling the ctypes out-parameters as the library does: what is
tested is this module's reading of those answers, not NVML."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runner.host import gpuinfo

SUCCESS, NOT_FOUND, NOT_SUPPORTED = 0, 6, 3


class Nvml:
    """Two GPUs: index 0 (handle 100) and the one at bus 0000:41:00.0 (handle 141)."""

    def __init__(self) -> None:
        self.clocks: list[int] = [1980]
        self.reasons = 0
        self.old_reasons_only = False
        self.asked: list[tuple[str, Any]] = []
        self.mode = 0

    def nvmlDeviceGetHandleByPciBusId_v2(self, bus: bytes, out: Any) -> int:
        self.asked.append(("bus", bus))
        if bus != b"0000:41:00.0":
            return NOT_FOUND
        out._obj.value = 141
        return SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: int, out: Any) -> int:
        self.asked.append(("index", index))
        out._obj.value = 100
        return SUCCESS

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int, out: Any) -> int:
        self.asked.append(("clock", handle.value))
        out._obj.value = self.clocks.pop(0) if len(self.clocks) > 1 else self.clocks[0]
        return SUCCESS

    def nvmlDeviceGetComputeMode(self, handle: Any, out: Any) -> int:
        out._obj.value = self.mode
        return SUCCESS

    def __getattr__(self, name: str) -> Any:
        # the clock-event reasons under the name of the driver this stands in for
        new = name == "nvmlDeviceGetCurrentClocksEventReasons"
        if new and not self.old_reasons_only:
            return self._reasons
        if name == "nvmlDeviceGetCurrentClocksThrottleReasons":
            return self._reasons
        raise AttributeError(name)

    def _reasons(self, handle: Any, out: Any) -> int:
        out._obj.value = self.reasons
        return SUCCESS


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[Nvml]:
    fake = Nvml()
    monkeypatch.setattr(gpuinfo, "_nvml", lambda: fake)
    yield fake
    gpuinfo.bind(None)


def test_the_bound_bus_id_is_read_rather_than_nvmls_first_gpu(nvml: Nvml) -> None:
    """CUDA_VISIBLE_DEVICES=1 makes CUDA's device 0 NVML's device 1."""
    gpuinfo.bind("0000:41:00.0")
    assert gpuinfo.sm_clock_mhz() == 1980.0
    assert nvml.asked == [("bus", b"0000:41:00.0"), ("clock", 141)]


def test_a_bus_id_nvml_does_not_know_falls_back_to_its_first_gpu(nvml: Nvml) -> None:
    gpuinfo.bind("0000:99:00.0")
    gpuinfo.sm_clock_mhz()
    gpuinfo.bind(None)  # forgotten: no bus asked for any more
    gpuinfo.sm_clock_mhz()
    assert nvml.asked == [
        ("bus", b"0000:99:00.0"),
        ("index", 0),
        ("clock", 100),
        ("index", 0),
        ("clock", 100),
    ]


def test_the_clock_event_mask_is_read_bit_by_bit(nvml: Nvml) -> None:
    nvml.reasons = 0x1 | 0x4 | 0x40 | 0x1000  # 0x1000: a bit this module has no name for
    assert gpuinfo.throttle_reasons() == ["gpu_idle", "sw_power_cap", "hw_thermal_slowdown"]
    nvml.reasons = 0
    assert gpuinfo.throttle_reasons() == []


def test_a_driver_before_535_is_read_under_the_old_name(nvml: Nvml) -> None:
    nvml.old_reasons_only = True
    nvml.reasons = 0x8 | 0x80
    assert gpuinfo.throttle_reasons() == ["hw_slowdown", "hw_power_brake_slowdown"]


def test_the_compute_mode_is_nvmls_number(nvml: Nvml) -> None:
    nvml.mode = 3  # exclusive process
    assert gpuinfo.compute_mode() == 3


def test_a_policy_read_only_once_is_left_out_of_the_difference() -> None:
    before = {"thermal_slowdown": 0, "sw_power_cap": 2_000_000, "board_limit": 7}
    after = {"sw_power_cap": 2_123_456, "thermal_slowdown": 1_000_000_000}
    assert gpuinfo.violation_delta_ms(before, after) == {
        "sw_power_cap": 0.123,  # rounded to the microsecond
        "thermal_slowdown": 1000.0,
    }
    assert list(gpuinfo.violation_delta_ms(before, after)) == ["sw_power_cap", "thermal_slowdown"]


def test_a_watch_reads_every_nth_sample_and_never_counts_idle_as_throttle(nvml: Nvml) -> None:
    nvml.clocks = [1400, 1980, 1755, 1600]
    nvml.reasons = 0x1 | 0x20  # idle and a software thermal slowdown
    watch = gpuinfo.ClockWatch(enabled=True, every=3)
    watch.start()
    for _ in range(10):  # samples 0, 3, 6 and 9 are read
        watch.during()
    watch.stop()
    result = watch.result()
    assert result == {
        "sm_clock_mhz": 1755.0,
        "sm_clock_min_mhz": 1400.0,
        "sm_clock_max_mhz": 1980.0,
        "throttle_reasons": ["sw_thermal_slowdown"],
    }
    # four readings: the median is the upper of the middle two (1600, 1755 sorted)
    assert len([a for a in nvml.asked if a[0] == "clock"]) == 4


def test_a_watch_that_is_off_or_asked_every_0th_sample_still_works(nvml: Nvml) -> None:
    off = gpuinfo.ClockWatch(enabled=False)
    off.start()
    off.during()
    assert off.result()["sm_clock_mhz"] is None and nvml.asked == []
    every = gpuinfo.ClockWatch(enabled=True, every=0)
    assert every.every == 1
    every.start()
    every.during()
    every.during()
    assert len(every.clocks) == 2


def test_without_nvml_a_watch_is_off_whatever_it_was_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gpuinfo, "_nvml", lambda: None)
    assert gpuinfo.ClockWatch(enabled=True).enabled is False
    assert gpuinfo.throttle_reasons() == [] and gpuinfo.sm_clock_mhz() is None

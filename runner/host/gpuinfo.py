"""Read-only facts about the GPU through NVML (ctypes; no extra package), clocks included.

Nothing here changes a setting: kernelwatch never touches clocks, power or MIG modes.
"""

from __future__ import annotations

import ctypes
import functools
import time
from typing import Any

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2


@functools.cache
def _nvml() -> Any | None:
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if lib.nvmlInit_v2() != 0:
        return None
    return lib


_bound: dict[str, str] = {}


def bind(pci_bus_id: str | None) -> None:
    """Read the GPU at this PCI bus id (CUDA's device 0) rather than NVML's index 0: the two
    differ where CUDA_VISIBLE_DEVICES reorders or hides devices."""
    if pci_bus_id:
        _bound["pci_bus_id"] = pci_bus_id
    else:
        _bound.pop("pci_bus_id", None)


def _handle(index: int = 0) -> Any | None:
    lib = _nvml()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    bus = _bound.get("pci_bus_id")
    if bus and lib.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(), ctypes.byref(handle)) == 0:
        return handle
    if lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
        return None
    return handle


def _uint(fn: str, *args: Any) -> int | None:
    lib, handle = _nvml(), _handle()
    if lib is None or handle is None:
        return None
    value = ctypes.c_uint()
    if getattr(lib, fn)(handle, *args, ctypes.byref(value)) != 0:
        return None
    return value.value


def sm_clock_mhz() -> float | None:
    value = _uint("nvmlDeviceGetClockInfo", NVML_CLOCK_SM)
    return float(value) if value is not None else None


THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_reasons() -> list[str]:
    """NVML's current clock event (throttle) reasons, by name; [] where NVML cannot tell."""
    lib, handle = _nvml(), _handle()
    if lib is None or handle is None:
        return []
    mask = ctypes.c_ulonglong()
    # Renamed in driver 535; the old name stays for older drivers.
    for fn in (
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
    ):
        getter = getattr(lib, fn, None)
        if getter is not None and getter(handle, ctypes.byref(mask)) == 0:
            return [name for bit, name in THROTTLE_REASONS.items() if mask.value & bit]
    return []


# nvmlDeviceGetViolationStatus: nanoseconds (cumulative since the driver loaded) that a policy
# held the clocks below their target; named like the clock-event reasons they count.
VIOLATION_POLICIES = {
    0: "sw_power_cap",  # NVML_PERF_POLICY_POWER (the power cap: clock event reason 0x4)
    1: "thermal_slowdown",  # NVML_PERF_POLICY_THERMAL
    3: "board_limit",  # NVML_PERF_POLICY_BOARD_LIMIT
    5: "reliability",  # NVML_PERF_POLICY_RELIABILITY
}


class _ViolationTime(ctypes.Structure):
    _fields_ = [("referenceTime", ctypes.c_ulonglong), ("violationTime", ctypes.c_ulonglong)]


def violation_ns() -> dict[str, int]:
    """NVML's violation counters by reason (read-only); a policy this GPU does not count is left
    out, so that "not counted" is never read as "never throttled"."""
    lib, handle = _nvml(), _handle()
    getter = getattr(lib, "nvmlDeviceGetViolationStatus", None) if lib is not None else None
    if getter is None or handle is None:
        return {}
    out = {}
    for policy, name in VIOLATION_POLICIES.items():
        value = _ViolationTime()
        if getter(handle, ctypes.c_int(policy), ctypes.byref(value)) == 0:
            out[name] = int(value.violationTime)
    return out


def violation_delta_ms(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """Milliseconds each policy throttled between two `violation_ns` readings (a counter that
    went backwards, e.g. a driver reload, counts as 0)."""
    return {
        name: round(max(after[name] - before[name], 0) / 1e6, 3)
        for name in sorted(before)
        if name in after
    }


THROTTLING = ("sw_power_cap", "thermal_slowdown")  # what a longer warm-up settles into

NVML_COMPUTEMODE_DEFAULT = 0


def compute_mode() -> int | None:
    """The GPU's compute mode (0 default: several processes may hold contexts; 3 exclusive
    process), None where NVML cannot tell."""
    return _uint("nvmlDeviceGetComputeMode")


class ClockWatch:
    """What one workload's samples saw in one process, read through NVML (read-only): the SM
    clock and the clock-event (throttle) reasons every `every`-th sample while the GPU runs it,
    and the violation counters (`violation_ns`) at `start()` and `stop()`, around all the
    samples: a power cap that lowers the clocks between two readings of the reasons still shows
    (as `violation_ms` and its reason in `throttle_reasons`). `result()` gives all of it."""

    def __init__(self, enabled: bool, every: int = 8) -> None:
        self.enabled = enabled and _nvml() is not None
        self.every = max(1, every)
        self.reset()

    def reset(self) -> None:
        self.count = 0
        self.clocks: list[float] = []
        self.reasons: set[str] = set()
        self.before: dict[str, int] = {}
        self.after: dict[str, int] | None = None
        self.started = self.stopped = time.monotonic()

    def counters(self) -> dict[str, int]:
        """The violation counters now ({} when disabled or not counted)."""
        return violation_ns() if self.enabled else {}

    def throttled_since(self, counters: dict[str, int]) -> list[str]:
        """The power or thermal policies whose counter advanced since `counters`."""
        delta = violation_delta_ms(counters, self.counters()) if counters else {}
        return [name for name in THROTTLING if delta.get(name, 0.0) > 0]

    def start(self) -> None:
        """Just before the first sample: forget the last workload, read the counters."""
        self.reset()
        if self.enabled:
            self.before = violation_ns()
        self.started = time.monotonic()

    def stop(self) -> None:
        """Just after the last sample."""
        self.stopped = time.monotonic()
        self.after = violation_ns() if self.enabled and self.before else {}

    def during(self) -> None:
        if self.enabled and self.count % self.every == 0:
            clock = sm_clock_mhz()
            if clock is not None:
                self.clocks.append(clock)
            # Idle is not a throttle: the GPU may have finished a short kernel already.
            self.reasons.update(r for r in throttle_reasons() if r != "gpu_idle")
        self.count += 1

    def result(self) -> dict[str, Any]:
        if self.after is None:
            self.stop()
        violation = violation_delta_ms(self.before, self.after or {})
        reasons = self.reasons | {name for name, ms in violation.items() if ms > 0}
        clocks = sorted(self.clocks)
        out: dict[str, Any] = {
            "sm_clock_mhz": clocks[len(clocks) // 2] if clocks else None,
            "sm_clock_min_mhz": clocks[0] if clocks else None,
            "sm_clock_max_mhz": clocks[-1] if clocks else None,
            "throttle_reasons": sorted(reasons),
        }
        if violation:
            out["violation_ms"] = violation
            out["window_ms"] = round((self.stopped - self.started) * 1e3, 3)
        return out

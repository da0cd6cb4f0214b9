"""Read-only facts about the GPU through NVML (ctypes; no extra package), clocks included.

Nothing here changes a setting: kernelwatch never touches clocks, power or MIG modes.
"""

from __future__ import annotations

import ctypes
import functools
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


class ClockWatch:
    """The SM clock and throttle reasons, read (NVML, read-only) every `every`-th sample while the
    GPU runs it; `result()` gives what one workload saw in one process."""

    def __init__(self, enabled: bool, every: int = 8) -> None:
        self.enabled = enabled and _nvml() is not None
        self.every = max(1, every)
        self.reset()

    def reset(self) -> None:
        self.count = 0
        self.clocks: list[float] = []
        self.reasons: set[str] = set()

    def during(self) -> None:
        if self.enabled and self.count % self.every == 0:
            clock = sm_clock_mhz()
            if clock is not None:
                self.clocks.append(clock)
            # Idle is not a throttle: the GPU may have finished a short kernel already.
            self.reasons.update(r for r in throttle_reasons() if r != "gpu_idle")
        self.count += 1

    def result(self) -> dict[str, Any]:
        clocks = sorted(self.clocks)
        return {
            "sm_clock_mhz": clocks[len(clocks) // 2] if clocks else None,
            "sm_clock_min_mhz": clocks[0] if clocks else None,
            "sm_clock_max_mhz": clocks[-1] if clocks else None,
            "throttle_reasons": sorted(self.reasons),
        }

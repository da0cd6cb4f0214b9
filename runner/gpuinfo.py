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


def _handle(index: int = 0) -> Any | None:
    lib = _nvml()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
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


def throttle_reasons() -> list[str]:
    lib, handle = _nvml(), _handle()
    if lib is None or handle is None:
        return []
    mask = ctypes.c_ulonglong()
    if lib.nvmlDeviceGetCurrentClocksEventReasons(handle, ctypes.byref(mask)) != 0:
        return []
    names = {
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
    return [name for bit, name in names.items() if mask.value & bit]

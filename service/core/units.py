"""The units kernelwatch understands; anything else in a result document is refused."""

from __future__ import annotations

from functools import lru_cache

# Seconds per unit, for converting timings to the microseconds every duration series uses.
TIME_UNITS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

# Base units Nsight Compute reports (seen in real H100 captures) plus the derived rates we show.
# Compound units are quotients of these ("byte/block", "inst/warp", "Gbyte/second").
_BASE_UNITS = frozenset(
    {
        *TIME_UNITS,
        "",
        "%",
        "second",
        "msecond",
        "usecond",
        "nsecond",
        "byte",
        "Kbyte",
        "Mbyte",
        "Gbyte",
        "Tbyte",
        "bit",
        "cycle",
        "Kcycle",
        "Mcycle",
        "hz",
        "Khz",
        "Mhz",
        "Ghz",
        "inst",
        "warp",
        "thread",
        "block",
        "cluster",
        "SM",
        "sector",
        "request",
        "register",
        "pass",
        "launch",
        "flop",
        "TFLOP",
        "GFLOP",
        "GB",
        "TB",
        "W",
        "C",
        "x",
    }
)


@lru_cache(maxsize=1024)  # a document checks a dozen distinct units hundreds of times
def is_known_unit(unit: str) -> bool:
    parts = unit.split("/")
    return (
        len(parts) <= 2 and all(p in _BASE_UNITS for p in parts) and (len(parts) == 1 or all(parts))
    )


def to_microseconds_factor(unit: str) -> float:
    return TIME_UNITS[unit] / TIME_UNITS["us"]

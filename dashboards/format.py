"""Number, time and label formatting shared by the figures and the templates (Jinja filters)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

# Durations are stored in microseconds; show them in the unit a person would say.
_DURATION_STEPS = (("s", 1e6), ("ms", 1e3), ("us", 1.0), ("ns", 1e-3))


def fmt_number(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 1e-3:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def fmt_value(value: float | None, unit: str) -> str:
    """570.9 us, 1.234 ms, 42 %; durations in us are rescaled, other units shown as stored."""
    if value is None:
        return "–"
    if unit == "us" and math.isfinite(value):
        for name, factor in _DURATION_STEPS:
            if abs(value) >= factor or name == "ns":
                return f"{fmt_number(value / factor)} {name}"
    return f"{fmt_number(value)} {unit}".rstrip()


def fmt_pct(change: float | None, digits: int = 1) -> str:
    if change is None or not math.isfinite(change):
        return "–"
    return f"{change * 100:+.{digits}f}%"


def fmt_fraction(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:.1f}%" if value >= 0.001 else f"{value * 100:.2g}%"


def fmt_share(value: float | None) -> str:
    """A share of a slowdown: "≈ 80%"; an estimate above all of it reads "≈ 100%"."""
    if value is None:
        return "–"
    return f"≈ {min(value, 1.0):.0%}"


def fmt_time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "–"


def short_sha(sha: str | None) -> str:
    return (sha or "")[:10]


def subject(message: str | None) -> str:
    return (message or "").split("\n", 1)[0]


def params_label(params: dict[str, Any] | None) -> str:
    """m=1024 n=1024 act=gelu: short enough for a legend, complete enough to tell apart."""
    return " ".join(f"{k}={v}" for k, v in (params or {}).items())


def series_label(workload: str, params: dict[str, Any], kernel: str) -> str:
    label = f"{workload} {params_label(params)}".strip()
    return label if kernel in (workload, "") else f"{label} · {kernel}"


FILTERS = {
    "num": fmt_number,
    "value": fmt_value,
    "pct": fmt_pct,
    "fraction": fmt_fraction,
    "share": fmt_share,
    "time": fmt_time,
    "sha": short_sha,
    "subject": subject,
    "params": params_label,
}

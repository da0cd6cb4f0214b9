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


def wrapped(text: str, width: int = 40, lines: int = 3) -> str:
    """`text` in lines of at most `width` characters joined by <br> (a tooltip that fits a
    phone's screen), at most `lines` of them, the last cut with "…" where more were left."""
    import textwrap

    parts = textwrap.wrap(text, width, break_long_words=True) or [""]
    if len(parts) > lines:
        parts = [*parts[: lines - 1], parts[lines - 1][: width - 1] + "…"]
    return "<br>".join(parts)


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
    if value is None or math.isnan(value):
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


_SUPERSCRIPT = {2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹"}


def series_label(
    workload: str, params: dict[str, Any], kernel: str | None, *, compact: bool = False
) -> str:
    """A series' name for a person: 'gemm_fwd m=1024 n=1024 k=1024 act=gelu · gemm_bias_act_fwd'
    on pages; `compact` for a line of 140 characters (a GitHub commit status):
    'gemm_fwd 1024³ gelu gemm_bias_act_fwd' (equal sizes as a power, strings bare)."""
    if compact:
        return _compact_label(workload, params, kernel)
    label = f"{workload} {params_label(params)}".strip()
    return label if kernel in (workload, "", None) else f"{label} · {kernel}"


def _compact_label(workload: str, params: dict[str, Any], kernel: str | None) -> str:
    numbers = [v for v in params.values() if _is_number(v)]
    parts = [workload]
    if len(numbers) > 1 and len(set(numbers)) == 1 and len(numbers) in _SUPERSCRIPT:
        parts.append(f"{_number(numbers[0])}{_SUPERSCRIPT[len(numbers)]}")
    elif numbers:
        parts.append("×".join(_number(n) for n in numbers))
    for name, value in params.items():
        if isinstance(value, str):
            parts.append(value)
        elif not _is_number(value):
            parts.append(f"{name}={_plain(value)}")
    if kernel and kernel not in parts:
        parts.append(kernel)
    return " ".join(parts)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_plain(v) for v in value)
    return str(value).lower() if isinstance(value, bool | None) else str(value)


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

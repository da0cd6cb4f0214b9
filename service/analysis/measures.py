"""What a PyTorch team watches beside a workload's duration, judged run against run: its prepare
time (what compiles there: Triton's JIT and autotuning, Inductor, a torch extension's build, as
the runner's caches see it), the peak device memory of one launch, and its numeric error against
the float64 reference. Plain numbers in, verdicts out; the SQL around it is service.evaluation.
verdicts.measure_verdicts, and a run's values are read from its document by service.store.
history.workload_rows.measures_of.

Each measure has a rule of its own, for each wanders its own way:
- prepare time wanders by tens of percent between runs of the same code (a disk, a busy host):
  a change counts beyond 20% and 0.5 s, or beyond what the line's history showed between runs
  (its second widest step: the widest may be a real change);
- peak memory is the allocator's count, the same from run to run for the same code: a change
  counts beyond 1% and 1 MiB, or beyond the history's spread;
- numeric error is read on a log scale: 1e-7 → 1e-4 is news though it still passes the
  tolerance, 1.1e-7 → 1.3e-7 is not; a change counts beyond a factor of 4 (or the history's
  spread, squared) where either side is above 1e-12.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    label: str
    unit: str
    relative: float = 0.0  # linear rules: the smallest relative change that counts
    absolute: float = 0.0  # ... and the smallest absolute one (a log rule: the floor)
    factor: float = 0.0  # log rules: the smallest ratio that counts


MEASURES = {
    "prepare_seconds": Measure("prepare time", "s", relative=0.20, absolute=0.5),
    "peak_memory_bytes": Measure("peak memory", "B", relative=0.01, absolute=float(1 << 20)),
    "numeric_error": Measure("numeric error", "rel. L2", absolute=1e-12, factor=4.0),
}
SPREAD_MARGIN = 1.5  # a change counts beyond this many times the history's widest step


@dataclass(frozen=True)
class Judgement:
    measure: str
    value: float
    base: float | None
    change: float | None  # relative: head / base - 1
    verdict: str  # new | unchanged | regressed | improved
    tolerance: float | None  # the relative change (log rules: the ratio - 1) that counts


def _steps(history: Sequence[float], floor: float, log: bool) -> list[float]:
    """Relative steps between consecutive values of the history (log rules: ratios - 1)."""
    out = []
    for before, after in itertools.pairwise(history):
        if log:
            b, a = max(before, floor), max(after, floor)
            out.append(max(a / b, b / a) - 1)
        elif before > 0:
            out.append(abs(after / before - 1))
    return out


def _spread(steps: list[float]) -> float:
    """How far the line's values step between runs, one step aside (it may be a real change,
    which must not widen the tolerance for the runs after it): the second widest of three or
    more, else nothing (the floors alone)."""
    return sorted(steps)[-2] if len(steps) >= 3 else 0.0


def judge(
    measure: str, value: float, base: float | None, history: Sequence[float] = ()
) -> Judgement:
    """`value` against `base` (the previous run's, None: there is none), `history` the line's
    earlier values, oldest first (base included), whose spread widens the tolerance."""
    rule = MEASURES[measure]
    if base is None:
        return Judgement(measure, value, None, None, "new", None)
    log = rule.factor > 0
    spread = _spread(_steps(history, rule.absolute, log))
    if log:
        tolerance = max(rule.factor - 1, (1 + spread) ** 2 - 1)
        # Below the floor an error is exact either way: 1e-15 and 1e-13 are no change.
        ratio = max(value, rule.absolute) / max(base, rule.absolute)
        change = ratio - 1
        moved = ratio > 1 + tolerance or ratio < 1 / (1 + tolerance)
    else:
        tolerance = max(rule.relative, SPREAD_MARGIN * spread)
        change = value / base - 1 if base > 0 else (0.0 if value == 0 else math.inf)
        moved = abs(change) > tolerance and abs(value - base) > rule.absolute
    verdict = "unchanged" if not moved else "regressed" if value > base else "improved"
    return Judgement(measure, value, base, change if math.isfinite(change) else None,
                          verdict, tolerance)  # fmt: skip


def describe(v: Judgement) -> str:
    """'peak memory 1.07 GB → 1.61 GB (+50%), regressed'."""
    return said(v.measure, v.value, v.base, v.change, v.verdict)


def said(
    measure: str, value: float, base: float | None, change: float | None, verdict: str | None
) -> str:
    """A judged measure in words (describe), from its stored fields; without its verdict where
    `verdict` is None ('peak memory 1.07 GB → 1.61 GB (+50%)')."""
    rule = MEASURES[measure]
    if base is None:
        return f"{rule.label} {_amount(measure, value)}" + (", new" if verdict else "")
    words = f"{rule.label} {_amount(measure, base)} → {_amount(measure, value)}"
    if change is not None and rule.factor > 0:
        ratio = change + 1
        words += f" (×{ratio:.3g})" if ratio < 1000 else f" (×{ratio:,.0f})"
    elif change is not None:
        words += f" ({change:+.0%})"
    return f"{words}, {verdict}" if verdict else words


def _amount(measure: str, value: float) -> str:
    if measure == "peak_memory_bytes":
        return f"{value / 1e9:.3g} GB" if value >= 1e8 else f"{value / 1e6:.3g} MB"
    if measure == "prepare_seconds":
        return f"{value:.3g} s"
    return f"{value:.1e}"

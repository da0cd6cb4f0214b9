"""What a PyTorch team watches beside a workload's duration, judged run against run: its prepare
time (what compiles there: Triton's JIT and autotuning, Inductor, a torch extension's build, as
the runner's caches see it), the peak device memory of one launch, and its numeric error against
the float64 reference. Plain numbers in, verdicts out; the SQL around it is service.evaluation.
verdicts.measure_verdicts, and a run's values are read from its document by service.store.
history.workload_rows.measures_of.

Each measure has a rule of its own, for each wanders its own way:
- prepare time wanders by tens of percent between runs of the same code (a disk, a busy host):
  a change counts beyond 20% and 0.5 s, or beyond what the line's history showed between runs
  (its second widest step: the widest may be a real change). It also depends on the process:
  the first workload a process prepares pays for the GPU's and the compiler's first use, so a
  launch timed alone (a short launch's extra processes, a doubtful one's pairs against its
  base) prepares in other seconds than among the suite's timing processes (on an H100, a
  compiled block 1.59 s in its pairs, 1.76 and 2.16 s among the suite: benchmarks/doubt_gpu.py,
  2026-12-08). Only prepare times of the suite's processes are compared run against run
  (`suite_levels`); a launch timed in pairs moves the line by its ratio to its base, timed alike;
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
class Prepared:
    """A run's prepare time of a workload and the kind of process it was timed in (a document's
    `process`); `paired_base`: the base's, timed in the same pairs, where it was timed so."""

    value: float
    process: str = "suite"
    paired_base: float | None = None


def suite_levels(line: Sequence[Prepared]) -> list[tuple[int, float]]:
    """(index, prepare time as the suite's timing processes saw it or would have) for the runs
    of `line` (oldest first) that say it: a value of the suite's processes as it is; a launch
    timed in pairs against its base, the level before it times its ratio to the base's; any
    other (timed alone, or in pairs before the line had a level) says nothing comparable."""
    out: list[tuple[int, float]] = []
    for i, p in enumerate(line):
        if p.process == "suite":
            out.append((i, p.value))
        elif p.process == "paired" and p.paired_base and out:
            out.append((i, out[-1][1] * p.value / p.paired_base))
    return out


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


def judge_prepare(line: Sequence[Prepared]) -> tuple[Judgement, int | None]:
    """The last prepare time of `line` (oldest first) judged against those before it, on the
    suite's levels (`suite_levels`: a paired one's value there is the level it carries); and
    the index of the run its base came from (None: its own pairs' base, or none). One timed
    only alone is judged against the last timed alone."""
    now, levels = line[-1], suite_levels(line)
    if levels and levels[-1][0] == len(line) - 1:
        value, before = levels[-1][1], levels[:-1]
        base_at, base = before[-1] if before else (None, None)
        return judge("prepare_seconds", value, base, [v for _, v in before]), base_at
    if now.process == "paired" and now.paired_base:  # no level yet: its pairs' base alone
        return judge("prepare_seconds", now.value, now.paired_base), None
    # Timed alone (a wandering launch with no base to pair with): against those timed so too.
    alike = [(i, p.value) for i, p in enumerate(line[:-1]) if p.process == now.process]
    base_at, base = alike[-1] if alike else (None, None)
    return judge("prepare_seconds", now.value, base, [v for _, v in alike]), base_at


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

"""Deciding whether a series changed: a rank test, false-discovery control and an effect floor.

A change is reported only when both hold:
- the head's samples differ from the baseline's by a two-sided Mann-Whitney U test, after
  Benjamini-Hochberg correction across every series of the run (q = 0.01), and
- the relative change of the median exceeds a floor: the larger of the duration class's floor
  and a multiple of the baseline's own run-to-run spread. The classes' detection targets are
  2% for >= 50 us, 5% for 10-50 us and 10% below (short kernels are noisier between processes);
  the class floor is half the target, so that a change of the target's size clears it despite
  noise (benchmarks/signal_quality.py measures recall and false alerts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import false_discovery_control, mannwhitneyu

Q = 0.01
NOISE_MULTIPLE = 3.0
MIN_BASELINE_SAMPLES = 5


def class_target(median_us: float) -> float:
    """The smallest change of a kernel of this duration that must be caught."""
    if median_us >= 50:
        return 0.02
    if median_us >= 10:
        return 0.05
    return 0.10


def class_floor(median_us: float) -> float:
    return class_target(median_us) / 2


def noise_floor(baseline_medians: list[float]) -> float:
    """NOISE_MULTIPLE x the robust relative spread of the baseline runs' medians."""
    if len(baseline_medians) < 3:
        return 0.0
    medians = np.asarray(baseline_medians, dtype=np.float64)
    center = float(np.median(medians))
    if center <= 0:
        return 0.0
    mad = float(np.median(np.abs(medians - center))) * 1.4826
    return NOISE_MULTIPLE * mad / center


@dataclass(frozen=True)
class Comparison:
    """One series at the head against its baseline, before the run-wide correction."""

    key: int
    change: float
    floor: float
    p_value: float
    head_median: float
    baseline_median: float
    baseline_results: int


def compare(
    key: int,
    head: np.ndarray,
    baseline: list[np.ndarray],
    lower_is_better: bool = True,
    baseline_medians: list[float] | None = None,
) -> Comparison | None:
    """None when there is too little baseline to test against.

    `baseline_medians`, when the caller has them stored, saves recomputing them.
    """
    pooled = np.concatenate(baseline) if baseline else np.empty(0)
    if pooled.size < MIN_BASELINE_SAMPLES or head.size < 3:
        return None
    medians = baseline_medians or [float(np.median(b)) for b in baseline]
    base = float(np.median(medians))
    now = float(np.median(head))
    change = (now - base) / base if base else 0.0
    if not lower_is_better:
        change = -change
    p_value = float(mannwhitneyu(head, pooled, alternative="two-sided").pvalue)
    floor = max(class_floor(base), noise_floor(medians))
    return Comparison(key, change, floor, p_value, now, base, len(baseline))


@dataclass(frozen=True)
class Decision:
    comparison: Comparison
    q_value: float
    verdict: str  # regressed | improved | unchanged


def decide(comparisons: list[Comparison], q: float = Q) -> list[Decision]:
    """Benjamini-Hochberg over the run's series, then the effect floor."""
    if not comparisons:
        return []
    q_values = false_discovery_control([c.p_value for c in comparisons], method="bh")
    out = []
    for c, q_value in zip(comparisons, q_values, strict=True):
        significant = q_value <= q
        if significant and c.change > c.floor:
            verdict = "regressed"
        elif significant and c.change < -c.floor:
            verdict = "improved"
        else:
            verdict = "unchanged"
        out.append(Decision(c, float(q_value), verdict))
    return out

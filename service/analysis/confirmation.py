"""The rule a re-measured regression must pass: the head's samples, timed interleaved with its
base's on one runner (a confirmation job, a bisection step), slower by a one-sided rank test at
`alpha` and by more than the duration class's floor (service.analysis.verdicts.class_floor).
Interleaved samples share everything but the code, so the samples are the unit here, unlike a
run's verdict against runs of other days (service.analysis.wander)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from service.analysis.verdicts import class_floor

ALPHA = 0.01


@dataclass(frozen=True)
class Remeasured:
    base_median: float
    head_median: float
    change: float  # (head - base) / base, of the medians
    p_value: float  # one-sided: the head is slower
    slower: bool  # significant at the alpha it was judged at, and beyond the class floor


def remeasure(head: np.ndarray, base: np.ndarray, alpha: float = ALPHA) -> Remeasured:
    """The head against its base, timed interleaved; `alpha` already corrected for however
    many regressions one job confirms."""
    b, h = float(np.median(base)), float(np.median(head))
    change = (h - b) / b
    p = float(mannwhitneyu(head, base, alternative="greater").pvalue)
    return Remeasured(b, h, change, p, p <= alpha and change > class_floor(b))

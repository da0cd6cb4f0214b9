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


def settle(verdict: str, state: str, change: float | None, p_value: float | None) -> str:
    """What a confirmation's finding (`state`: confirmed, not_reproduced, unmeasured) makes of
    a regressed or pending verdict: regressed where the interleaved rerun found the head slower,
    unchanged where it did not; anything else, and any verdict the finding is not about, as
    it is."""
    if verdict not in ("regressed", "pending") or change is None or p_value is None:
        return verdict
    if state == "confirmed":
        return "regressed"
    return "unchanged" if state == "not_reproduced" else verdict


def settle_note(state: str, change: float | None, p_value: float | None) -> str:
    """The reason a settled verdict gives."""
    if state == "confirmed" and change is not None:
        return (
            f"confirmed by an interleaved rerun of base and head on one runner: {change:+.1%} "
            f"(p = {p_value:.2g})"
        )
    if state == "not_reproduced" and change is not None:
        return (
            f"unchanged: the interleaved rerun of base and head on one runner found "
            f"{change:+.1%} (p = {p_value:.2g}), not a slowdown"
        )
    return ""

"""The rule a re-measured regression must pass: the head's samples, timed interleaved with its
base's on one runner (a confirmation job, a bisection step, a run's own doubtful launches),
slower by a one-sided rank test at `alpha` and by more than the duration class's floor
(service.analysis.verdicts.class_floor). Interleaved samples share everything but the code, so
the samples are the unit here, unlike a run's verdict against runs of other days
(service.analysis.wander) — as long as each side's processes agree. Where they sit apart (a
launch whose every process lands on one of two levels, 1.6% apart, each process's samples within
0.2%: issue 52's tmatmul sat at 244.8 or 248.7 us), the samples of a side are as many as its
processes, not its samples: a head whose processes happened to land high twice and its base's
once comes out 1.3% slower at p = 2e-6 with 40 samples a process
(tests/service/analysis/test_confirmation.py). There the head is slower only where every one of
its processes is slower than every one of its base's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from service.analysis.verdicts import class_floor

ALPHA = 0.01
APART = 0.005  # sd of a side's log process medians beyond which its processes sit apart


@dataclass(frozen=True)
class Remeasured:
    base_median: float
    head_median: float
    change: float  # (head - base) / base, of the medians
    p_value: float  # one-sided: the head is slower
    slower: bool  # significant at the alpha it was judged at, and beyond the class floor


def remeasure(
    head: Sequence[np.ndarray], base: Sequence[np.ndarray], alpha: float = ALPHA
) -> Remeasured:
    """The head against its base, timed interleaved, each side as its processes' samples;
    `alpha` already corrected for however many regressions one job confirms."""
    every_head, every_base = np.concatenate(list(head)), np.concatenate(list(base))
    b, h = float(np.median(every_base)), float(np.median(every_head))
    change = (h - b) / b
    p = float(mannwhitneyu(every_head, every_base, alternative="greater").pvalue)
    slower = p <= alpha and change > class_floor(b) and separated(head, base)
    return Remeasured(b, h, change, p, slower)


def process_spread(processes: Sequence[np.ndarray]) -> float:
    """The sd of the log medians of a side's processes (0 with fewer than two)."""
    medians = np.log([float(np.median(p)) for p in processes])
    return float(np.std(medians, ddof=1)) if len(medians) > 1 else 0.0


def separated(head: Sequence[np.ndarray], base: Sequence[np.ndarray]) -> bool:
    """Where either side's processes sit apart: every head process slower than every base
    process; else (their samples the unit) True."""
    if max(process_spread(head), process_spread(base)) <= APART:
        return True
    return min(float(np.median(p)) for p in head) > max(float(np.median(p)) for p in base)


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

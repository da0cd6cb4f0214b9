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
    p_faster: float = 1.0  # one-sided: the head is faster
    faster: bool = False  # likewise, the other way

    @property
    def state(self) -> str:
        """What a confirmation found: confirmed (slower), faster, or not_reproduced."""
        return "confirmed" if self.slower else "faster" if self.faster else "not_reproduced"

    @property
    def p_found(self) -> float:
        """The p of what was found: of being faster where it was, else of being slower."""
        return self.p_faster if self.faster else self.p_value


def remeasure(
    head: Sequence[np.ndarray], base: Sequence[np.ndarray], alpha: float = ALPHA
) -> Remeasured:
    """The head against its base, timed interleaved, each side as its processes' samples;
    `alpha` already corrected for however many regressions one job confirms."""
    every_head, every_base = np.concatenate(list(head)), np.concatenate(list(base))
    b, h = float(np.median(every_base)), float(np.median(every_head))
    change = (h - b) / b
    p = float(mannwhitneyu(every_head, every_base, alternative="greater").pvalue)
    p_faster = float(mannwhitneyu(every_head, every_base, alternative="less").pvalue)
    floor = class_floor(b)
    slower = p <= alpha and change > floor and separated(head, base)
    faster = p_faster <= alpha and change < -floor and separated(base, head)
    return Remeasured(b, h, change, p, slower, p_faster, faster)


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
    """What a confirmation's finding (`state`: confirmed, faster, not_reproduced, unmeasured)
    makes of a regressed or pending verdict: regressed where the interleaved rerun found the
    head slower, improved where it found a pending one faster, unchanged where it found
    neither (or a regression faster); anything else, and any verdict the finding is not
    about, as it is."""
    if verdict not in ("regressed", "pending") or change is None or p_value is None:
        return verdict
    if state == "confirmed":
        return "regressed"
    if state == "faster":
        return "improved" if verdict == "pending" else "unchanged"
    return "unchanged" if state == "not_reproduced" else verdict


def settle_note(settled: str, doubted: float, change: float | None, p_value: float | None) -> str:
    """The reason a verdict settled by a confirmation (`settled`) gives; `doubted`: the change
    the run's own verdict had."""
    if change is None or p_value is None:
        return ""
    if settled in ("regressed", "improved"):
        return (
            f"confirmed by an interleaved rerun of base and head on one runner: {change:+.1%} "
            f"(p = {p_value:.2g})"
        )
    if settled == "unchanged":
        what = "a slowdown" if doubted > 0 else "an improvement"
        return (
            f"unchanged: the interleaved rerun of base and head on one runner found "
            f"{change:+.1%} (p = {p_value:.2g}), not {what}"
        )
    return ""

"""Deciding whether a series changed: a rank test, false-discovery control and an effect floor.

A change is reported only when both hold:
- the head's samples differ from the baseline's by a two-sided Mann-Whitney U test, after
  Benjamini-Hochberg correction across every series of the run (q = 0.01), and
- the relative change of the median exceeds a floor: the larger of the duration class's floor
  and a multiple of the run-to-run spread within the baseline's segment (service.analysis.
  segments: the results since the series' last level shift). The classes' detection targets are
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
EXACT_BELOW = 8  # scipy's exact test is for samples of at most 8


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


@dataclass(frozen=True)
class Candidate:
    """One series to compare: the head's samples and its baseline runs' samples."""

    key: int
    head: np.ndarray
    baseline: list[np.ndarray]
    lower_is_better: bool = True
    baseline_medians: list[float] | None = None  # stored already: saves recomputing them
    # The medians whose spread sets the noise floor (the baseline's whole segment); without
    # them, the baseline runs' own medians.
    noise_medians: list[float] | None = None


def compare(
    key: int,
    head: np.ndarray,
    baseline: list[np.ndarray],
    lower_is_better: bool = True,
    baseline_medians: list[float] | None = None,
) -> Comparison | None:
    """None when there is too little baseline to test against."""
    return compare_many([Candidate(key, head, baseline, lower_is_better, baseline_medians)])[0]


def rank_test_p_values(
    pairs: list[tuple[np.ndarray, np.ndarray]], alternative: str = "two-sided"
) -> list[float]:
    """The Mann-Whitney U p-value of each (head, base) pair, as one `mannwhitneyu` call each
    would give it, batched by sample sizes.

    A suite's series mostly share sample counts, and scipy's per-call overhead (~0.2-1 ms) is
    far larger than the test itself: pairs of equal sizes go through one vectorised call per
    method, the method chosen per pair as method="auto" would (exact where a sample has at most
    EXACT_BELOW values and the pair has no ties, else asymptotic), so that small samples cost no
    more than large ones."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (head, base) in enumerate(pairs):
        groups.setdefault((head.size, base.size), []).append(i)
    p_values = [0.0] * len(pairs)
    for (n_head, n_base), members in groups.items():
        heads = np.stack([pairs[i][0] for i in members])
        bases = np.stack([pairs[i][1] for i in members])
        exact = np.zeros(len(members), dtype=bool)
        if min(n_head, n_base) <= EXACT_BELOW:
            ordered = np.sort(np.concatenate([heads, bases], axis=1), axis=1)
            exact = ~(np.diff(ordered, axis=1) == 0).any(axis=1)
        for method, rows in (("exact", exact), ("asymptotic", ~exact)):
            if rows.any():
                p = mannwhitneyu(
                    heads[rows], bases[rows], axis=1, method=method, alternative=alternative
                ).pvalue
                for i, v in zip(np.asarray(members)[rows], np.atleast_1d(p), strict=True):
                    p_values[int(i)] = float(v)
    return p_values


def compare_many(candidates: list[Candidate]) -> list[Comparison | None]:
    """`compare` for many series at once, with the rank tests batched (rank_test_p_values)."""
    pooled = [np.concatenate(c.baseline) if c.baseline else np.empty(0) for c in candidates]
    usable = [
        i
        for i, c in enumerate(candidates)
        if pooled[i].size >= MIN_BASELINE_SAMPLES and c.head.size >= 3
    ]
    tested = rank_test_p_values([(candidates[i].head, pooled[i]) for i in usable])
    p_values = dict(zip(usable, tested, strict=True))
    out: list[Comparison | None] = [None] * len(candidates)
    for i in usable:
        c = candidates[i]
        medians = c.baseline_medians or [float(np.median(b)) for b in c.baseline]
        base = float(np.median(medians))
        now = float(np.median(c.head))
        change = (now - base) / base if base else 0.0
        if not c.lower_is_better:
            change = -change
        floor = max(class_floor(base), noise_floor(c.noise_medians or medians))
        out[i] = Comparison(c.key, change, floor, p_values[i], now, base, len(c.baseline))
    return out


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

"""Deciding whether a series changed: a test on processes, false-discovery control and an effect
floor.

A change is reported only when both hold:
- the head's run differs from the baseline's runs by a two-sided t-test whose unit is the timing
  process (its median), with the run-to-run variance the series' two levels of noise give
  (service.analysis.wander), after Benjamini-Hochberg correction across every series of the run
  (q = 0.01); where no run has two processes to tell them apart, a Mann-Whitney U test of the
  samples stands in, and
- the relative change of the median exceeds a floor: the largest of the duration class's floor,
  a multiple of the run-to-run spread within the baseline's segment (service.analysis.segments:
  the results since the series' last level shift) and the same multiple of the run-to-run spread
  the processes of the runs compared imply (so that a series is never called changed by less
  than its own wander, also while its level is too young to have measured it). The classes'
  detection targets are 2% for >= 50 us, 5% for 10-50 us and 10% below (short kernels are
  noisier between processes); the class floor is half the target, so that a change of the
  target's size clears it despite noise (benchmarks/signal_quality.py measures recall and false
  alerts).

A run whose every kernel sat off its level together (a whole run a few percent fast or slow, as
short kernels' runs do) would carry that offset into each change: where the run's controls
(series whose kernels nothing changed) measure it, it is taken out of the change and its doubt
added to the test (service.analysis.run_offset); the head's run then counts in the test only for
how far the series wanders apart from its group's runs, where earlier runs measured that.

A level with fewer results than wander.min_level asks (two; three after a level shift) has not
shown how far its runs wander: a change that clears everything else there is *pending*, never
red, and the next run along the line settles it: changed when that run does not come back (it
stays beyond the floor from the baseline on the same side, at the head's level or further on);
unchanged when it comes back to the baseline (the head was an outlier of the series' wander,
left out of the level's baseline from then on) or goes beyond the floor the other way (the
head's change is not confirmed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import mannwhitneyu

from service.analysis import run_offset, wander
from service.analysis.candidate import Candidate
from service.analysis.run_controls import history_logs, run_offsets

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
    # The level's run-to-run wander is not known yet (too few results: wander.min_level).
    young: bool = False
    # For a young level: the next run's change against the same baseline, None while there
    # is no next run along the line.
    next_change: float | None = None
    unit: str = "process"  # what the test counted: "process" medians, or "sample"
    # The run's common offset taken out of `change` (service.analysis.run_offset), and how
    # many controls measured it (0: nothing taken out).
    offset: float = 0.0
    controls: int = 0
    # Where one control alone measured that offset (`sole_control`, its key): the series as
    # measured, nothing taken out (a verdict the one control would flip waits: `decide`), and
    # the next run's change against the same baseline, as measured (None: no next run yet).
    alternative: Comparison | None = None
    sole_control: int | None = None
    next_raw: float | None = None


def compare(
    key: int,
    head: np.ndarray,
    baseline: list[np.ndarray],
    lower_is_better: bool = True,
    baseline_medians: list[float] | None = None,
    head_counts: Sequence[int] = (),
    baseline_counts: list[Sequence[int]] | None = None,
) -> Comparison | None:
    """None when there is too little baseline to test against."""
    candidate = Candidate(
        key, head, baseline, lower_is_better, baseline_medians,
        head_counts=head_counts, baseline_counts=baseline_counts or [],
    )  # fmt: skip
    return compare_many([candidate])[0]


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
    """`compare` for many series at once (the series of one run): each one's change is taken
    net of its run's common offset where the run's controls measure one
    (service.analysis.run_offset); the rank tests, where they stand in, are batched
    (rank_test_p_values)."""
    pooled = [np.concatenate(c.baseline) if c.baseline else np.empty(0) for c in candidates]
    usable = [
        i
        for i, c in enumerate(candidates)
        if pooled[i].size >= MIN_BASELINE_SAMPLES and c.head.size >= 3
    ]
    units: dict[int, tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander]] = {}
    tests: dict[int, wander.LevelTest | None] = {}
    for i in usable:
        c = candidates[i]
        head = wander.log_process_medians(c.head, c.head_counts)
        counts = c.baseline_counts or [()] * len(c.baseline)
        base = [wander.log_process_medians(b, n) for b, n in zip(c.baseline, counts, strict=True)]
        medians = c.baseline_medians or [float(np.median(b)) for b in c.baseline]
        level = wander.measure(head, base, c.noise_medians or medians, c.history, c.settled_at)
        units[i] = (head, base, medians, level)
        testable = level.process_df or not level.young  # else the samples must stand in
        tests[i] = wander.test(head, base, level) if testable else None
    groups = [(candidates[i].group, class_target(float(np.median(units[i][2])))) for i in usable]
    logs = [history_logs(candidates[i]) for i in usable]
    apart = run_offset.apart_vars(logs, groups)
    own = dict(zip(usable, apart, strict=True))
    # The floor of each one's own change without controls: a control beyond it is a change of
    # its own, never its run's offset (run_offset.shared_controls).
    floors = {i: _floor(candidates[i], units[i], None, None) for i in usable}
    changed = {i for i in usable if abs(_own_change(candidates[i], units[i])) > floors[i]}
    measured = run_offsets(candidates, usable, units, tests, groups, own, logs, changed)
    offsets = {i: o for i, o in measured.items() if o.evident}
    raw_tests = dict(tests)
    for i, offset in offsets.items():  # tested again net of the offset, and of its doubt
        head, base, _, level = units[i]
        if tests[i] is not None:
            # Net of its run's offset, the head's run wanders only as far as the series does
            # apart from its group's runs, where that is known.
            alone = (
                None if own[i] is None else max(0.0, own[i] - level.process_var / level.processes)
            )
            tests[i] = wander.test(head - offset.log, base, level, offset.var, alone)
    # One control's word: the series' reading without it too (verdicts it flips wait: decide).
    sole = [i for i, o in offsets.items() if o.sole is not None]
    by_rank = [i for i in usable if tests[i] is None]
    raw_by_rank = [i for i in sole if tests[i] is None]
    ranked = rank_test_p_values(
        [(_net(candidates[i].head, offsets.get(i)), pooled[i]) for i in by_rank]
        + [(candidates[i].head, pooled[i]) for i in raw_by_rank]
    )
    p_values = dict(zip(by_rank, ranked, strict=False))
    raw_p = dict(zip(raw_by_rank, ranked[len(by_rank) :], strict=True))
    out: list[Comparison | None] = [None] * len(candidates)
    for i in usable:
        tested, offset = tests[i], offsets.get(i)
        p_value = tested.p_value if tested else p_values[i]
        out[i] = _comparison(candidates[i], units[i], p_value, tested is not None, offset,
                             _floor(candidates[i], units[i], measured.get(i), own[i]))  # fmt: skip
        if offset is not None and offset.sole is not None:
            raw = raw_tests[i]
            alternative = _comparison(
                candidates[i], units[i], raw.p_value if raw else raw_p[i], raw is not None,
                None, floors[i],
            )  # fmt: skip
            sole = {"sole_control": candidates[offset.sole].key,
                    "next_raw": alternative_next(candidates[i], units[i])}  # fmt: skip
            out[i] = replace(out[i], alternative=replace(alternative, **sole), **sole)
    return out


def _comparison(
    c: Candidate,
    unit: tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander],
    p_value: float,
    by_process: bool,
    offset: run_offset.Offset | None,
    floor: float,
) -> Comparison:
    """The series' comparison, its head net of `offset` (None: as measured)."""
    _, _, medians, level = unit
    base = float(np.median(medians))
    now = float(np.median(_net(c.head, offset)))
    sign = 1.0 if c.lower_is_better else -1.0
    change = sign * (now - base) / base if base else 0.0
    later = c.next_median
    next_change = sign * (later - base) / base if base and later is not None else None
    return Comparison(
        c.key, change, floor, p_value, now, base, len(c.baseline), young=level.young,
        next_change=next_change if level.young else None,
        unit="process" if by_process else "sample",
        offset=offset.relative if offset else 0.0, controls=offset.controls if offset else 0,
    )  # fmt: skip


def alternative_next(
    c: Candidate, unit: tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander]
) -> float | None:
    """The next run's change against the head's baseline, as measured (None: no next run)."""
    base = float(np.median(unit[2]))
    if c.next_median is None or base <= 0:
        return None
    return (1.0 if c.lower_is_better else -1.0) * (c.next_median - base) / base


def _own_change(
    c: Candidate, unit: tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander]
) -> float:
    """The series' relative change against its own baseline, as measured."""
    base = float(np.median(unit[2]))
    return float(np.median(c.head)) / base - 1 if base > 0 else 0.0


def _floor(
    c: Candidate,
    unit: tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander],
    offset: run_offset.Offset | None,
    apart: float | None,
) -> float:
    """The floor of the series' change: its class's, and its wander's (`_wander_floor`)."""
    _, _, medians, level = unit
    base = float(np.median(medians))
    return max(class_floor(base), _wander_floor(c.noise_medians or medians, level, offset, apart))


def _net(samples: np.ndarray, offset: run_offset.Offset | None) -> np.ndarray:
    """A head's samples net of its run's offset."""
    return samples if offset is None else samples * math.exp(-offset.log)


def _wander_floor(
    medians: list[float],
    level: wander.Wander,
    offset: run_offset.Offset | None,
    apart: float | None,
) -> float:
    """NOISE_MULTIPLE x how far the series' runs wander: its segment's spread, and its runs'
    (service.analysis.wander); where the run's controls measured its offset (taken out or
    shown near zero) on a level old enough to know its wander, what is left is how far the series
    wanders apart from its group's runs (`apart`) and what the controls leave unknown of the
    offset, if that is less (short kernels' runs wander 3-4% together on an H100 and 0.5%
    apart, and a 14% change would be under a floor of 12%)."""
    raw = max(noise_floor(medians), NOISE_MULTIPLE * level.run_spread)
    if offset is None or apart is None or level.young:
        return raw
    own = max(apart, level.process_var / level.processes)
    return min(raw, NOISE_MULTIPLE * math.sqrt(own + offset.spread))

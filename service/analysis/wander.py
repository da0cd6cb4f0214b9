"""Run-to-run wander: how far a series' run medians move between runs of the same code, from the
two levels at which a run measures a workload (its timing processes, and the runs themselves).

A run times a workload in several processes. Within a process the samples of a long kernel sit
tight, but processes of the same binary can sit far apart: on an H200, a register-spilling 4.2 ms
SGEMM's process medians spread by 1-5% within a run while each process's samples had an
interquartile range under 1% (benchmarks/history_gpu.py, its `spill` workload). Samples of one
process are therefore not independent evidence about the code: the unit of the test is the
process (its median), and the noise of a run's median has two parts:

- between the processes of a run (`process_var`, pooled over the head's and the baseline's runs,
  so every run knows it, a level's first one too), and
- between runs beyond that (a run whose processes all sat slow together: the four short kernels
  of one H200 history run sat 3-6% above their level in all six processes), which only several
  runs of a level can show.

`measure` gives the variance of one run's mean (log) process median. The share between runs
comes from the series' history (every result read before the head, its level and the levels
before it), as the robust spread of its run medians from one to the next (`successive_spread`:
a level shift is one difference among many and barely moves it): a level of two or three runs
alone would know it to one or two degrees of freedom, too few for any test. Without such a
history (a new series), the level's own spread stands in. It is never below what the processes
alone imply (`process_var` / processes per run), which is what a level that behaves unlike the
series' past (a commit that made the kernel spill) shows at once. A level of one run is *young*:
its own wander is not measured yet, and a verdict on it waits for the next run
(service.analysis.verdicts).

A level that began at a level shift (a verdict, an alert a person accepted, a change point:
service.analysis.segments) runs code the history before it did not, so that history cannot vouch
for it, and two of its runs that happen to agree know its wander to one degree of freedom. On an
H200, a tiled SGEMM that a commit made spill (0.65 -> 9.4 ms) ran within 0.3% in the level's
first two runs and 5% fast in every process of its third, while an instrument that loaded both
builds into one process measured that commit at -0.4% and the runs before the shift had sat
within 0.2% (benchmarks/results/history_h200_wander, commit 5): such a level stays young until
MIN_LEVEL_AFTER_SHIFT results. A series' first level (no shift read) keeps MIN_LEVEL: nothing
from before it claims to know its wander.

`test` is the t-test of the head's run against the baseline's runs with that variance, in log
space (relative changes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

MIN_LEVEL = 2  # results a level needs before its run-to-run wander counts as measured ...
MIN_LEVEL_AFTER_SHIFT = 3  # ... and a level that began at a level shift (`min_level`)
MIN_HISTORY = 4  # results of a series before its history says how far its runs wander
MIN_DF = 4  # the fewest degrees of freedom a test is given (see `test`)


def log_process_medians(samples: np.ndarray, counts: Sequence[int]) -> np.ndarray:
    """The log of each process's median, for samples stored back to back (`counts` per process;
    empty counts: one process). Non-positive medians (a metric that is not a duration) give
    an empty array: the test then has no unit to work with."""
    sizes = [int(c) for c in counts if c] or [samples.size]
    if sum(sizes) != samples.size or samples.size == 0:
        sizes = [samples.size]
    medians = np.array([np.median(p) for p in np.split(samples, np.cumsum(sizes)[:-1]) if p.size])
    if medians.size == 0 or np.any(medians <= 0) or not np.all(np.isfinite(medians)):
        return np.empty(0)
    return np.log(medians)


@dataclass(frozen=True)
class Wander:
    """The two levels of a series' noise, as variances of logs (relative, squared)."""

    process_var: float  # of one process's median around its run's mean
    process_df: int  # degrees of freedom behind it (0: no run had two processes)
    run_var: float  # of one run's mean: what a comparison of two runs must rise above
    run_df: int  # behind its share between runs (0: none measured)
    processes: float  # processes per baseline run, on average
    young: bool  # the level has fewer than MIN_LEVEL results: run_var is a lower bound

    @property
    def run_spread(self) -> float:
        """The relative standard deviation of a run's median, from run to run."""
        return math.sqrt(self.run_var)


def successive_spread(values: np.ndarray) -> float:
    """The robust standard deviation of one point of a sequence, from its first differences
    (their median absolute value x 1.4826 / sqrt(2)): a shift of level is one difference among
    many, so it barely moves it."""
    return step_spread(np.abs(np.diff(values)))


def step_spread(steps: np.ndarray) -> float:
    """`successive_spread` from the sizes of the steps between successive points."""
    if steps.size == 0:
        return 0.0
    ordered = np.sort(steps)
    middle = float(ordered[(ordered.size - 1) // 2] + ordered[ordered.size // 2]) / 2
    return middle * 1.4826 / math.sqrt(2)


def _logs(medians: Sequence[float]) -> np.ndarray:
    values = np.asarray(medians, dtype=np.float64)
    return np.log(values[(values > 0) & np.isfinite(values)])


def measure(
    head: np.ndarray,
    base: Sequence[np.ndarray],
    level: Sequence[float],
    history: Sequence[float] = (),
    settled_at: int = MIN_LEVEL,
) -> Wander:
    """`head`: the head's log process medians; `base`: each baseline run's; `level`: the run
    medians of the baseline's whole segment (its level); `history`: the series' run medians
    before the head, nearest first (its level's and the levels' before it); `settled_at`: the
    results the level needs before it is not young (`min_level`)."""
    runs = [r for r in (head, *base) if r.size >= 2]
    df = sum(r.size - 1 for r in runs)
    process_var = sum(float(np.sum((r - r.mean()) ** 2)) for r in runs) / df if df else 0.0
    processes = float(np.mean([r.size for r in base])) if base else float(max(head.size, 1))
    implied = process_var / processes
    past, own = _logs(history)[::-1], _logs(level)
    if past.size >= MIN_HISTORY:
        between, between_df = successive_spread(past) ** 2, past.size - 2
    elif own.size >= MIN_LEVEL:
        between = (1.4826 * float(np.median(np.abs(own - np.median(own))))) ** 2
        between_df = own.size - 1
    else:
        between, between_df = 0.0, 0
    young = own.size < settled_at
    return Wander(process_var, df, max(between, implied), between_df, processes, young)


def min_level(segment_kind: str) -> int:
    """The results a level needs before its wander counts as measured: MIN_LEVEL_AFTER_SHIFT
    where it began at a level shift (any segment kind but "history"), else MIN_LEVEL."""
    return MIN_LEVEL if segment_kind == "history" else MIN_LEVEL_AFTER_SHIFT


@dataclass(frozen=True)
class LevelTest:
    statistic: float
    df: int
    p_value: float
    se: float  # of the difference of the log means


def test(
    head: np.ndarray,
    base: Sequence[np.ndarray],
    wander: Wander,
    offset_var: float = 0.0,
    head_between: float | None = None,
) -> LevelTest | None:
    """The two-sided t-test of the head run's mean log process median against the mean of the
    baseline runs' means, with the variance the wander gives each run; None where the processes
    give nothing to test with (no unit, or no degree of freedom at all).

    The variance of the difference has a share between runs (known to the history's results
    - 2 degrees of freedom, or the level's - 1) and a share between processes (known to every
    run's processes); the degrees of freedom of the test are Satterthwaite's for that sum, so
    that runs which agree as closely as their processes do are not tested as if only their few
    medians knew the noise, and never fewer than MIN_DF: with one, Student's t is Cauchy's
    distribution, and a change of 25 standard errors between two runs of a new series would be
    no evidence at all. What the few runs leave unknown of their wander is the floor's to guard
    (NOISE_MULTIPLE x the run spread, service.analysis.verdicts), not the test's.

    `offset_var`: the variance of a run offset taken out of the head beforehand
    (service.analysis.run_offset), a share of its own, given MIN_DF degrees of freedom;
    `head_between`: then, how far the head's run wanders from run to run apart from that offset
    (its wander apart from its group's runs), in place of the level's share for the head; the
    baseline's mean keeps the level's (its runs' offsets are not taken out)."""
    if head.size == 0 or not base or any(r.size == 0 for r in base):
        return None
    runs = len(base)
    between = max(0.0, wander.run_var - wander.process_var / wander.processes)
    own = between if head_between is None else min(between, head_between)
    run_share = own + between / runs
    process_share = wander.process_var * (1 / head.size + 1 / (runs * wander.processes))
    se = math.sqrt(run_share + process_share + offset_var)
    parts = [(run_share, wander.run_df), (process_share, wander.process_df), (offset_var, MIN_DF)]
    if any(v > 0 and d < 1 for v, d in parts):
        return None  # a share of the noise nothing measured
    spread = sum(v * v / d for v, d in parts if v > 0)
    df = max(MIN_DF, int(min(se**4 / spread, 10_000))) if spread > 0 else MIN_DF
    diff = float(head.mean() - np.mean([r.mean() for r in base]))
    if se == 0:  # identical processes and runs: any difference at all is certain
        statistic = math.copysign(math.inf, diff) if diff else 0.0
        return LevelTest(statistic, df, 0.0 if diff else 1.0, 0.0)
    statistic = diff / se
    return LevelTest(statistic, df, float(2 * student_t.sf(abs(statistic), df)), se)

"""Level shifts in a series of medians: exact penalised segmentation on plain arrays.

Detection. An equivalent of E-divisive means from a maintained package: exact penalised
segmentation (PELT, via `ruptures.KernelCPD` with the linear kernel, i.e. the L2 / mean-shift
cost, in C: 0.4 ms for 200 flat points, quadratic in n) of the medians standardised by the
series' own noise. The noise is the MAD of first differences / sqrt(2) (robust to the steps
themselves), never below 0.1% of the level, and the penalty is PENALTY x log(n) in those units, a
conservative BIC (about 0.2% of pure-noise series of 200 points get any candidate).
Candidates are then pruned, weakest first, until every remaining shift between the medians of
its adjacent segments exceeds the floor a verdict would need: the duration class's floor
(`verdicts.class_floor`, larger for shorter kernels) or NOISE_MULTIPLE x the relative noise,
whichever is larger. Segments are at least MIN_SIZE points long, so a single outlying run never
makes a change point, and a shift shows up once MIN_SIZE results after it are in. A segment of
fewer than EPISODE points is kept only where every one of its points is a floor away from its
neighbours' levels: two slow runs among three make no level of their own.

No SQL here: `service.evaluation.verdicts.changepoints` stores what this finds over a branch's
history, and `service.analysis.segments` uses it on a commit's ancestors to start its baseline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import ruptures as rpt
from numpy.lib.stride_tricks import sliding_window_view

from service.analysis.verdicts import NOISE_MULTIPLE, class_floor
from service.analysis.wander import successive_spread

MIN_SIZE = 3
EPISODE = 5  # a segment shorter than this must be a level of its own (_mixed_cut)
PENALTY = 3.0
MIN_REL_NOISE = 0.001


@dataclass(frozen=True)
class Shift:
    """A change point: `index` is the first point after the shift."""

    index: int
    before_median: float
    after_median: float
    change: float  # (after - before) / before: positive is slower for a duration


def _median(a: np.ndarray) -> float:
    """np.median without its generality: a few times faster on the short arrays used here."""
    s = np.sort(a)
    return float(s[(s.size - 1) // 2] + s[s.size // 2]) / 2


noise = successive_spread  # robust standard deviation of one point: MAD of first differences


def detect(medians: Sequence[float], min_size: int = MIN_SIZE) -> list[Shift]:
    """Change points of a series of medians in order, oldest first; [] when there are none."""
    x = np.asarray(medians, dtype=np.float64)
    n = x.size
    if n < 2 * min_size or not np.all(np.isfinite(x)) or not np.all(x > 0):
        return []  # too short, or not a duration: relative changes need a positive level
    if x.max() - x.min() <= class_floor(float(x.max())) * x.min():
        return []  # every segment median lies in the range, so no shift can reach a floor
    level = _median(x)
    sigma = max(noise(x), MIN_REL_NOISE * level)
    noise_floor = NOISE_MULTIPLE * sigma / level
    if min_size >= 3 and not _may_shift(x, noise_floor):
        return []
    z = ((x - level) / sigma).reshape(-1, 1)
    algo = rpt.KernelCPD(kernel="linear", min_size=min_size).fit(z)
    cuts = [int(b) for b in algo.predict(pen=PENALTY * math.log(n))][:-1]
    while True:
        cuts = _refine(z[:, 0], cuts, min_size)
        shifts, ratios = _shifts(x, cuts, noise_floor)
        if ratios and min(ratios) <= 1:
            del cuts[int(np.argmin(ratios))]  # the weakest shift, relative to its floor
            continue
        mixed = _mixed_cut(x, cuts, noise_floor)
        if mixed is None:
            return shifts
        del cuts[mixed]


def _mixed_cut(x: np.ndarray, cuts: list[int], noise_floor: float) -> int | None:
    """A cut that bounds a short segment (fewer than EPISODE points) holding a point within a
    floor of the level on that cut's other side: such a segment is a mixture (two slow runs
    among three, say), not a level of its own, and the cut goes. A short segment whose every
    point is a floor away from both neighbours (a real regression fixed three commits later)
    keeps its cuts. None when no cut is of the kind."""
    bounds = [0, *cuts, x.size]
    levels = [_median(x[a:b]) for a, b in pairwise(bounds)]
    for i, (a, b) in enumerate(pairwise(bounds)):
        if b - a >= EPISODE:
            continue
        for side, cut in ((i - 1, i - 1), (i + 1, i)):  # (neighbour segment, cut between)
            if not 0 <= side < len(levels) or not 0 <= cut < len(cuts):
                continue
            level = levels[side]
            floor = max(class_floor(level), noise_floor)
            if np.any(np.abs(x[a:b] / level - 1) <= floor):
                return cut
    return None


def _may_shift(x: np.ndarray, noise_floor: float) -> bool:
    """False when no two segments of >= 3 points can have medians a floor apart: then the answer
    is [] without segmenting (most series, most of the time; PELT is quadratic on flat data).

    The median of any run of >= 3 consecutive points lies between the smallest and the largest
    median of its windows of 3 and 4 consecutive points (if more than half of a run lay below a
    bound, two of some three consecutive points would; length 4 is the one exception, [lo, hi,
    hi, lo], hence the windows of 4). So no shift can exceed (hi - lo) / lo.
    """
    if x.size < 3:
        return False
    by3 = np.sort(sliding_window_view(x, 3), axis=1)[:, 1]
    by4 = np.sort(sliding_window_view(x, 4), axis=1)[:, 1:3].sum(axis=1) / 2 if x.size > 3 else by3
    lo, hi = min(by3.min(), by4.min()), max(by3.max(), by4.max())
    return bool(hi - lo > max(class_floor(float(hi)), noise_floor) * lo)


def _refine(z: np.ndarray, cuts: list[int], min_size: int) -> list[int]:
    """Move each cut to the best mean-shift split between its neighbours; drop it when that split
    leaves fewer than `min_size` points on a side (a step too recent to tell, or an outlier that
    only the minimum segment length had padded into a segment of its own)."""
    out: list[int] = []
    for i in range(len(cuts)):
        a = out[-1] if out else 0
        b = cuts[i + 1] if i + 1 < len(cuts) else z.size
        seg = z[a:b]
        k = np.arange(1, seg.size)
        s1, s2 = np.cumsum(seg), np.cumsum(seg * seg)
        left = s2[:-1] - s1[:-1] ** 2 / k
        right = (s2[-1] - s2[:-1]) - (s1[-1] - s1[:-1]) ** 2 / (seg.size - k)
        cut = a + 1 + int(np.argmin(left + right))
        if cut - a >= min_size and b - cut >= min_size:
            out.append(cut)
    return out


def _shifts(x: np.ndarray, cuts: list[int], noise_floor: float) -> tuple[list[Shift], list[float]]:
    """Each cut's shift between the medians of its adjacent segments, and the ratio of its size to
    its floor."""
    bounds = [0, *cuts, x.size]
    levels = [_median(x[a:b]) for a, b in pairwise(bounds)]
    shifts, ratios = [], []
    for i, cut in enumerate(cuts):
        before, after = levels[i], levels[i + 1]
        change = (after - before) / before
        floor = max(class_floor(min(before, after)), noise_floor)
        shifts.append(Shift(cut, before, after, change))
        ratios.append(abs(change) / floor)
    return shifts, ratios

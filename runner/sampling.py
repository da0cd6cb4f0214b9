"""When to stop sampling: enough samples whose spread has settled, or the time cap."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from runner.suite import Timing


def rel_spread(samples: list[float]) -> float:
    """Relative interquartile range: robust to the odd interrupted sample."""
    if len(samples) < 4:
        return float("inf")
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else float("inf")


def collect(
    sample: Callable[[], float], timing: Timing, clock: Callable[[], float] = time.monotonic
) -> tuple[list[float], str]:
    """Take samples until the spread is below target, or it stops changing, or time is up.

    A kernel whose spread never reaches the target (short kernels: 2-4% between processes)
    stops once its spread estimate has settled: the last two checks agree within 10%.
    """
    samples: list[float] = []
    started = clock()
    previous = float("inf")
    while True:
        samples.append(sample())
        n = len(samples)
        if n >= timing.max_samples:
            return samples, f"max_samples {timing.max_samples}"
        if clock() - started > timing.max_seconds and n >= min(timing.min_samples, 3):
            return samples, f"time cap {timing.max_seconds:g} s after {n} samples"
        if n >= timing.min_samples and n % max(timing.min_samples // 2, 1) == 0:
            spread = rel_spread(samples)
            if spread <= timing.target_rel_spread:
                return samples, f"relative spread {spread:.2%} <= {timing.target_rel_spread:.2%}"
            if abs(spread - previous) <= 0.1 * spread:
                return samples, f"relative spread settled at {spread:.2%} after {n} samples"
            previous = spread

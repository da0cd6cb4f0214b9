"""What the batched rank tests cost per series by sample size (issue 17, item 5: a compare of
5-sample series was 2x slower than one of 100-sample series while small samples went through
scipy's exact test one call at a time).

    python -m benchmarks.rank_tests [--series 1000] [--repeat 5]

Times service.analysis.verdicts.rank_test_p_values over `series` (head, base) pairs of each size,
with and without ties, against one `mannwhitneyu` call per pair, and prints microseconds per
series (the best of `repeat`) with the ratio of the slowest size to the fastest.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial

import numpy as np
from scipy.stats import mannwhitneyu

from service.analysis.verdicts import rank_test_p_values

SIZES = ((5, 5), (5, 40), (8, 120), (30, 90), (100, 300))


def pairs_of(n_head: int, n_base: int, count: int, ties: bool, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        head, base = rng.normal(100.4, 1, n_head), rng.normal(100, 1, n_base)
        out.append((head.round(0), base.round(0)) if ties else (head, base))
    return out


def one_by_one(pairs: list[tuple]) -> list[float]:
    return [float(mannwhitneyu(h, b).pvalue) for h, b in pairs]


def best_us(fn, repeat: int, count: int) -> float:
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        took.append(time.perf_counter() - started)
    return min(took) / count * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--series", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    print(f"{'head x base':>12} {'ties':>5} {'batched us/series':>18} {'one call us/series':>19}")
    batched = []
    for n_head, n_base in SIZES:
        for ties in (False, True):
            pairs = pairs_of(n_head, n_base, args.series, ties, seed=n_head * 1000 + n_base)
            fast = best_us(partial(rank_test_p_values, pairs), args.repeat, args.series)
            few = pairs[:200]
            slow = best_us(partial(one_by_one, few), 1, len(few))
            batched.append(fast)
            tied = "yes" if ties else "no"
            print(f"{n_head:>5} x {n_base:<4} {tied:>5} {fast:>18.1f} {slow:>19.1f}")
    print(f"batched, the slowest size against the fastest: {max(batched) / min(batched):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

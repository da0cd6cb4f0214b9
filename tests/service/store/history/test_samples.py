"""Summary statistics: the same quartiles as NumPy's, from one sort."""

from __future__ import annotations

import numpy as np
import pytest

from service.store.history.samples import summarize


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 30, 101, 2000])
def test_quartiles_and_extremes_match_numpy(n: int) -> None:
    x = np.random.default_rng(n).lognormal(3, 1, n)
    s = summarize(x)
    assert [s.q1, s.median, s.q3] == pytest.approx(np.percentile(x, [25, 50, 75]), rel=1e-12)
    assert (s.min, s.max, s.n) == (x.min(), x.max(), n)
    assert s.mean == pytest.approx(x.mean())
    assert s.rel_iqr == pytest.approx((s.q3 - s.q1) / s.median)


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        summarize(np.empty(0))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_batched_rank_tests_equal_one_call_per_pair(alternative: str) -> None:
    from scipy.stats import mannwhitneyu

    from service.analysis.verdicts import rank_test_p_values

    rng = np.random.default_rng(7)
    # Equal sizes (batched), odd ones out, small ones (exact test) and ties.
    sizes = [(30, 90)] * 12 + [(30, 60), (29, 90), (5, 6), (5, 6), (12, 12)]
    sizes += [(5, 5)] * 8 + [(3, 40)] * 4 + [(1, 1), (8, 9), (9, 8)]
    pairs = [
        (rng.normal(100 + (i % 3 - 1) * 1.5, 1, n), np.round(rng.normal(100, 1, m), 1))
        for i, (n, m) in enumerate(sizes)
    ]
    batched = rank_test_p_values(pairs, alternative)
    single = [float(mannwhitneyu(h, b, alternative=alternative).pvalue) for h, b in pairs]
    assert batched == pytest.approx(single, rel=1e-9, abs=1e-15)
    assert min(single) < 0.01 < max(single)  # the data holds both outcomes

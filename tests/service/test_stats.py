"""Summary statistics: the same quartiles as NumPy's, from one sort."""

from __future__ import annotations

import numpy as np
import pytest

from service.analysis.stats import summarize


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

"""kernels/timing.py on the CPU: ``summary`` of a sample list (median, quartiles by
``statistics.quantiles``' default exclusive method, minimum, mean, count; one sample is its own
quartiles) and the L2 flush's 128 MiB floor. The CUDA-event timing, the L2 flusher and the traced
library need CuPy and a GPU (tests/kernels/test_gpu.py)."""

from __future__ import annotations

import pytest

from kernels.timing import MIN_FLUSH_BYTES, summary


def test_summary_of_five_samples_worked_out_by_hand() -> None:
    # Exclusive quartiles of 1..5: positions (n + 1) / 4 = 1.5 and 3 (n + 1) / 4 = 4.5.
    assert summary([5.0, 1.0, 4.0, 2.0, 3.0]) == {
        "median_ms": 3.0,
        "q1_ms": 1.5,
        "q3_ms": 4.5,
        "min_ms": 1.0,
        "mean_ms": 3.0,
        "samples": 5,
    }


def test_one_sample_is_its_own_median_and_quartiles() -> None:
    assert summary([2.5]) == {
        "median_ms": 2.5,
        "q1_ms": 2.5,
        "q3_ms": 2.5,
        "min_ms": 2.5,
        "mean_ms": 2.5,
        "samples": 1,
    }


def test_an_even_count_takes_the_middle_pairs_mean() -> None:
    s = summary([1.0, 2.0, 3.0, 10.0])
    assert s["median_ms"] == 2.5 and s["mean_ms"] == 4.0
    # Exclusive quartiles of four: positions 1.25 and 3.75.
    assert s["q1_ms"] == pytest.approx(1.25) and s["q3_ms"] == pytest.approx(8.25)


def test_the_flush_writes_at_least_128_mib() -> None:
    # Twice the L2 where that is more (an H100's 50 MiB L2 gives 128 MiB all the same).
    assert MIN_FLUSH_BYTES == 128 * 1024 * 1024


def test_no_samples_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no samples to summarize"):
        summary([])

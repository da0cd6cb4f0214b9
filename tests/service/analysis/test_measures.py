"""Measures beside a workload's duration, each judged by its own rule, on plain numbers."""

from __future__ import annotations

import pytest

from service.analysis.measures import describe, judge


@pytest.mark.parametrize(
    ("measure", "base", "value", "verdict"),
    [
        ("prepare_seconds", 2.0, 2.3, "unchanged"),  # +15%: prepare times wander so
        ("prepare_seconds", 2.0, 6.0, "regressed"),  # a cache that no longer hits
        ("prepare_seconds", 8.0, 2.0, "improved"),
        ("prepare_seconds", 0.1, 0.5, "unchanged"),  # x5, but 0.4 s: nothing a person waits for
        ("peak_memory_bytes", 1.0e9, 1.004e9, "unchanged"),
        ("peak_memory_bytes", 1.0e9, 1.5e9, "regressed"),
        ("peak_memory_bytes", 1.0e9, 0.9e9, "improved"),
        ("peak_memory_bytes", 20e6, 20.5e6, "unchanged"),  # +2.5%, but under 1 MiB
        ("numeric_error", 1e-7, 1e-4, "regressed"),  # still within a 1e-3 tolerance: news
        ("numeric_error", 1.1e-7, 1.3e-7, "unchanged"),
        ("numeric_error", 1e-5, 1e-7, "improved"),
        ("numeric_error", 1e-15, 1e-13, "unchanged"),  # both at the floor: exact either way
    ],
)
def test_each_measure_by_its_own_rule(measure: str, base: float, value: float, verdict: str):
    assert judge(measure, value, base, [base]).verdict == verdict


def test_a_first_value_is_new() -> None:
    first = judge("peak_memory_bytes", 1.0e9, None)
    assert (first.verdict, first.change) == ("new", None)
    assert describe(first) == "peak memory 1 GB, new"


def test_a_line_that_wanders_widens_the_tolerance_one_real_step_does_not() -> None:
    """Prepare times of the same code stepping 30-40% apart: +45% is within what the line
    does. A line that stepped once (a real change) and sat still: +25% still counts."""
    wandering = [2.0, 2.7, 2.0, 2.8, 2.0]
    assert judge("prepare_seconds", 2.9, 2.0, wandering).verdict == "unchanged"
    stepped = [2.0, 2.0, 2.0, 6.0, 6.0, 6.0]
    assert judge("prepare_seconds", 7.5, 6.0, stepped).verdict == "regressed"
    # and for the error, a line that sat a factor 3 apart asks for more than 4
    noisy = [1e-7, 3e-7, 1e-7, 3e-7]
    assert judge("numeric_error", 5e-7, 1e-7, noisy).verdict == "unchanged"
    assert judge("numeric_error", 2e-6, 1e-7, noisy).verdict == "regressed"


def test_in_words() -> None:
    assert describe(judge("peak_memory_bytes", 1.61e9, 1.07e9, [1.07e9])) == (
        "peak memory 1.07 GB → 1.61 GB (+50%), regressed"
    )
    assert describe(judge("numeric_error", 1e-4, 1e-7, [1e-7])) == (
        "numeric error 1.0e-07 → 1.0e-04 (×1,000), regressed"
    )
    assert describe(judge("prepare_seconds", 2.1, 2.0, [2.0])) == (
        "prepare time 2 s → 2.1 s (+5%), unchanged"
    )

"""Measures beside a workload's duration, each judged by its own rule, on plain numbers."""

from __future__ import annotations

import pytest

from service.analysis.measures import Prepared, describe, judge, judge_prepare, suite_levels


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


def test_prepare_times_compare_only_where_timed_alike() -> None:
    """The doubt history on an H100 (2026-12-08): a compiled block prepared in 1.76 s among the
    suite's processes, 1.59 s in its pairs against its base when its launch changed, 2.16 s
    among the suite again on the innocent commit after it. Judged value against value, the
    innocent commit regressed +36%; on the suite's levels, its pairs moved the line by their
    ratio to the base's, timed alike, and the innocent commit is within the tolerance."""
    line = [Prepared(1.757), Prepared(1.587, "paired", 1.55), Prepared(2.16)]
    assert suite_levels(line) == [
        (0, 1.757),
        (1, pytest.approx(1.757 * 1.587 / 1.55)),
        (2, 2.16),
    ]
    innocent, at = judge_prepare(line)
    assert (innocent.verdict, at) == ("unchanged", 1)
    assert innocent.base == pytest.approx(1.799, abs=0.001)
    # A short launch's extra processes prepare it alone: a first in every one; not the line.
    assert suite_levels([Prepared(0.5), Prepared(2.2, "short"), Prepared(0.6)]) == [
        (0, 0.5),
        (2, 0.6),
    ]


def test_a_slower_prepare_in_its_pairs_regresses_once() -> None:
    """A commit whose launch changed and whose compile takes 3 s more, timed in pairs (3.5 s
    against its base's 1.5 s): regressed there; the next commit, among the suite's processes
    at the new level, is unchanged, not regressed again, nor improved against the pairs."""
    changed = [Prepared(2.0), Prepared(2.1), Prepared(3.5, "paired", 1.5)]
    found, at = judge_prepare(changed)
    assert (found.verdict, at) == ("regressed", 1)
    assert found.change == pytest.approx(3.5 / 1.5 - 1)
    after, at = judge_prepare([*changed, Prepared(4.8)])
    assert (after.verdict, at) == ("unchanged", 2)
    # With no level before it, the pairs' base is its base.
    first, at = judge_prepare([Prepared(3.5, "paired", 1.5)])
    assert (first.verdict, first.base, at) == ("regressed", 1.5, None)
    # A launch timed only alone (no base to pair with) is held to the last timed alone.
    alone, at = judge_prepare([Prepared(2.0, "alone"), Prepared(2.1), Prepared(6.0, "alone")])
    assert (alone.verdict, alone.base, at) == ("regressed", 2.0, 0)

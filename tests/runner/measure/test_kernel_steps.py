"""runner.measure.kernel_steps: a kernel timeline's entries from traced launches. Each kernel's
calls and time per step (never fewer than one call), its share of all kernel time, largest
first and ties by name; rows of one kernel merged before its name is shortened to the service's
limit; a launch counted by its own duration, not the gaps between launches."""

from __future__ import annotations

import pytest

from runner.document.names import MAX_KERNEL_NAME
from runner.measure.kernel_steps import aggregate, from_totals


def test_rows_of_one_kernel_are_merged_into_one_entry() -> None:
    """nsys reports a kernel once per variant it saw; the timeline names it once."""
    rows = [("softmax", 3, 900.0), ("gemm", 4, 2000.0), ("softmax", 1, 100.0)]
    assert from_totals(rows, steps=2) == [
        {"kernel": "gemm", "calls": 2, "total_ns": 1000.0, "share": 0.666667},
        {"kernel": "softmax", "calls": 2, "total_ns": 500.0, "share": 0.333333},
    ]


@pytest.mark.parametrize(("instances", "calls"), [(1, 1), (7, 1), (8, 2), (12, 2), (13, 3)])
def test_calls_per_step_are_the_instances_over_the_steps_rounded(
    instances: int, calls: int
) -> None:
    (entry,) = from_totals([("k", instances, 50.0)], steps=5)
    assert entry["calls"] == calls


def test_equal_times_are_ordered_by_name() -> None:
    rows = [("zeta", 1, 10.0), ("alpha", 1, 10.0), ("mid", 1, 30.0)]
    assert [k["kernel"] for k in from_totals(rows, steps=1)] == ["mid", "alpha", "zeta"]


def test_kernels_that_took_no_time_have_no_share_rather_than_a_division_by_zero() -> None:
    assert from_totals([("empty", 5, 0.0)], steps=5) == [
        {"kernel": "empty", "calls": 1, "total_ns": 0.0, "share": 0.0}
    ]


def test_time_per_step_is_rounded_to_a_tenth_of_a_nanosecond() -> None:
    (entry,) = from_totals([("k", 3, 1000.0)], steps=3)
    assert entry["total_ns"] == 333.3


def test_long_names_are_shortened_after_merging_and_stay_two_kernels() -> None:
    prefix = "void cutlass::Kernel<" + "T" * MAX_KERNEL_NAME
    rows = [(prefix + "A>", 1, 10.0), (prefix + "B>", 1, 30.0), (prefix + "A>", 1, 10.0)]
    kernels = from_totals(rows, steps=1)
    assert len(kernels) == 2
    assert all(len(k["kernel"]) == MAX_KERNEL_NAME for k in kernels)
    assert [k["total_ns"] for k in kernels] == [30.0, 20.0]


def test_a_launch_counts_its_duration_not_the_idle_time_before_it() -> None:
    records = [("copy", 0, 40), ("gemm", 1_000, 1_060), ("copy", 5_000, 5_040)]
    assert aggregate(records, steps=1) == [
        {"kernel": "copy", "calls": 2, "total_ns": 80.0, "share": 0.571429},
        {"kernel": "gemm", "calls": 1, "total_ns": 60.0, "share": 0.428571},
    ]

"""Where a workload's time went when its kernels did not change (service.analysis.host_time):
whether two runs captured the same kernels with every determinant known, the kernels' time per
launch and the time the timer measured beyond it (ns in, us out), None wherever either run lacks
a timeline of the same kernels or a measured time, and the sentence an alert reads."""

from __future__ import annotations

import pytest

from service.analysis.host_time import HostTime, describe, host_time, same_kernels


def test_the_same_kernels_with_known_determinants_are_the_same() -> None:
    assert same_kernels({"gemm": "d1", "relu": "d2"}, {"relu": "d2", "gemm": "d1"})


@pytest.mark.parametrize(
    ("base", "head"),
    [
        ({}, {}),  # nothing captured says nothing
        ({"gemm": "d1"}, {"gemm": "d9"}),  # a determinant changed
        ({"gemm": "d1"}, {"gemm": "d1", "relu": "d2"}),  # a kernel appeared
        ({"gemm": "d1", "relu": "d2"}, {"gemm": "d1"}),  # a kernel went
        ({"gemm": None}, {"gemm": None}),  # equal, but what determined it is unknown
        ({"gemm": "d1", "relu": None}, {"gemm": "d1", "relu": None}),  # one unknown is enough
    ],
)
def test_kernels_are_not_the_same_unless_every_one_is_known_equal(
    base: dict[str, str | None], head: dict[str, str | None]
) -> None:
    assert not same_kernels(base, head)


def test_the_time_beyond_the_kernels_is_the_timer_less_their_sum() -> None:
    # Base: 3 + 2 us of kernels in an 8 us launch, 3 us beside them; head: the same kernels,
    # a synchronize between them made it 11 us, 6 us beside them.
    found = host_time({"a": 3000.0, "b": 2000.0}, {"a": 3000.0, "b": 2050.0}, 8.0, 11.0)
    assert found is not None
    assert found.kernels_us == pytest.approx((5.0, 5.05))
    assert found.between_us == pytest.approx((3.0, 5.95))


@pytest.mark.parametrize(
    ("base_k", "head_k", "base_us", "head_us"),
    [
        ({"a": 1e3}, {"a": 1e3}, None, 4.0),  # no measured time at the base
        ({"a": 1e3}, {"a": 1e3}, 4.0, None),  # nor at the head
        ({}, {}, 4.0, 4.0),  # no timeline at all
        ({"a": 1e3}, {}, 4.0, 4.0),  # no timeline at the head
        ({}, {"a": 1e3}, 4.0, 4.0),  # none at the base
        ({"a": 1e3}, {"b": 1e3}, 4.0, 4.0),  # other kernels
    ],
)
def test_without_both_timelines_of_the_same_kernels_and_times_there_is_none(
    base_k: dict[str, float],
    head_k: dict[str, float],
    base_us: float | None,
    head_us: float | None,
) -> None:
    assert host_time(base_k, head_k, base_us, head_us) is None


def test_a_measured_time_of_zero_is_a_time_not_a_missing_one() -> None:
    # Only None means "not measured"; 0 us is a (strange) value to compute with.
    found = host_time({"a": 1000.0}, {"a": 1000.0}, 0.0, 2.0)
    assert found is not None and found.between_us == pytest.approx((-1.0, 1.0))


def test_host_time_travels_as_lists() -> None:
    assert HostTime((5.0, 5.1), (3.0, 6.0)).as_dict() == {
        "kernels_us": [5.0, 5.1],
        "between_us": [3.0, 6.0],
    }


SAID = (
    "the kernels are the same as in the base run (their compiled code, launch and inputs); "
    "the time went to the host code around them or the environment"
)


def test_without_a_timeline_the_sentence_says_only_that_the_kernels_are_the_same() -> None:
    assert describe(None) == SAID


def test_with_a_timeline_the_sentence_gives_both_times_to_a_tenth_of_a_us() -> None:
    text = describe(HostTime((5.04, 5.06), (3.0, 12.345)))
    assert text == (
        f"{SAID}: in the kernel timeline the kernels took 5.0 → 5.1 us a launch, "
        "the time between and around them 3.0 → 12.3 us"
    )

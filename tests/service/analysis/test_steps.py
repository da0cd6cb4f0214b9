"""Level shifts in a series of medians (service.analysis.steps.detect), on exact hand-made series:
a shift must exceed its floor (the duration class's, or NOISE_MULTIPLE x the series' own
successive noise) and at the floor is none, on both sides of the boundary for long and short
kernels; a segment needs `min_size` points; a short segment is a level of its own only where
every one of its points is a floor away from its neighbours (EPISODE); changes are relative to
the level before, negative for a speed-up."""

from __future__ import annotations

import math

import pytest

from service.analysis.steps import EPISODE, MIN_SIZE, Shift, detect
from service.analysis.verdicts import NOISE_MULTIPLE, class_floor


def test_a_long_kernels_step_must_exceed_its_class_floor() -> None:
    assert class_floor(100.0) == pytest.approx(0.01)
    # 100 -> 101 us is exactly the 1% floor: no shift can be more than the floor.
    assert detect([100.0] * 10 + [101.0] * 10) == []
    # 1.01%: beyond it, at the first slower point, with the segments' medians.
    (shift,) = detect([100.0] * 10 + [101.01] * 10)
    assert (shift.index, shift.before_median, shift.after_median) == (10, 100.0, 101.01)
    assert shift.change == pytest.approx(0.0101)


def test_a_shift_of_exactly_the_floor_is_pruned_where_the_range_is_wider() -> None:
    # Two runs at 99 widen the series' range to 2% (past the early exit on the range), yet the
    # segments' medians are still 100 and 101: a shift of exactly the 1% floor, pruned.
    dipped = [100.0] * 4 + [99.0, 99.0] + [100.0] * 4
    assert detect([*dipped, *[101.0] * 10]) == []
    (shift,) = detect([*dipped, *[101.01] * 10])
    assert (shift.index, shift.before_median, shift.after_median) == (10, 100.0, 101.01)


def test_a_short_kernels_step_must_exceed_its_larger_class_floor() -> None:
    # Below 10 us the floor is 5%: 5.0 -> 5.25 us sits on it, 5.0 -> 5.2525 (5.05%) is beyond.
    assert class_floor(5.0) == pytest.approx(0.05)
    assert detect([5.0] * 10 + [5.25] * 10) == []
    (shift,) = detect([5.0] * 10 + [5.2525] * 10)
    assert shift.index == 10 and shift.change == pytest.approx(0.0505)


def test_a_speed_up_is_a_negative_change_relative_to_the_level_before() -> None:
    assert detect([100.0] * 10 + [90.0] * 10) == [Shift(10, 100.0, 90.0, pytest.approx(-0.1))]


def alternating(level: float, n: int) -> list[float]:
    """`level`, `level` + 2, ... : every step between successive points is 2."""
    return [level + 2.0 * (i % 2) for i in range(n)]


def test_a_step_within_three_times_the_series_own_noise_is_none() -> None:
    # Successive steps of 2 (all but the one at the shift): the noise of one point is
    # 2 x 1.4826 / sqrt(2) = 2.10, and the floor 3 x 2.10 / the series' median, about 6%.
    sigma = 2.0 * 1.4826 / math.sqrt(2)
    # +5% (100/102 -> 105/107): beyond the 1% class floor, within 3 x 2.10 / 103.5 = 6.1%.
    assert NOISE_MULTIPLE * sigma / 103.5 > 5 / 101
    assert detect(alternating(100.0, 10) + alternating(105.0, 10)) == []
    # +10% (-> 110/112): the medians 101 and 111 are 9.9% apart, beyond 3 x 2.10 / 106 = 5.9%.
    (shift,) = detect(alternating(100.0, 10) + alternating(110.0, 10))
    assert (shift.index, shift.before_median, shift.after_median) == (10, 101.0, 111.0)
    assert shift.change == pytest.approx(10 / 101)


def test_a_step_needs_min_size_points_after_it() -> None:
    two_after = [100.0] * 12 + [110.0] * 2
    assert MIN_SIZE == 3 and detect(two_after) == []
    # Asked for segments of two, the same two slower points are a level.
    assert detect(two_after, min_size=2) == [Shift(12, 100.0, 110.0, pytest.approx(0.1))]


def test_a_regression_fixed_three_commits_later_is_two_shifts() -> None:
    # Every point of the short segment is 10% from both neighbours' levels: a level of its own.
    found = detect([100.0] * 10 + [110.0] * 3 + [100.0] * 10)
    assert [(s.index, s.before_median, s.after_median) for s in found] == [
        (10, 100.0, 110.0),
        (13, 110.0, 100.0),
    ]
    # The fix is relative to the regressed level: -10 / 110.
    assert found[1].change == pytest.approx(-1 / 11)


@pytest.mark.parametrize(
    "episode",
    [
        [110.0, 100.0, 110.0],  # two slow runs among three
        [110.0, 100.0, 110.0, 110.0],  # three among four: still shorter than EPISODE
    ],
)
def test_a_short_segment_holding_a_point_at_its_neighbours_level_is_no_level(
    episode: list[float],
) -> None:
    assert len(episode) < EPISODE
    assert detect([100.0] * 10 + episode + [100.0] * 10) == []


def test_a_segment_of_episode_points_is_a_level_even_with_a_point_at_its_neighbours() -> None:
    # EPISODE = 5 points: long enough to stand as a level though one of them sits at 100.
    episode = [110.0, 110.0, 100.0, 110.0, 110.0]
    assert len(episode) == EPISODE
    found = detect([100.0] * 10 + episode + [100.0] * 10)
    assert [(s.index, s.before_median, s.after_median) for s in found] == [
        (10, 100.0, 110.0),
        (15, 110.0, 100.0),
    ]


@pytest.mark.parametrize("bad", [-100.0, math.inf])
def test_a_series_that_is_no_positive_finite_duration_has_none(bad: float) -> None:
    # Relative changes need a positive, finite level everywhere.
    assert detect([100.0] * 10 + [bad] + [200.0] * 10) == []

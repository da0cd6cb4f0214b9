"""Work counters on plain values (service.analysis.work): a kernel's determinants (the runner's
digest and ncu's launch figures), the relative move between two counts (DRAM bytes within an
absolute 64 KiB, zero to anything infinite), the noise learned from pairs of captures of equal
determinants measured apart, each counter's tolerance (its floor, or the Student's t bound of
the next move), when a counter is steady, and the verdict and sentence for each counter."""

from __future__ import annotations

import math

import pytest

from service.analysis.work import (
    ABSOLUTE,
    EXACT,
    LAUNCH,
    MIN_PAIRS,
    WORK_COUNTERS,
    WORK_LABELS,
    Capture,
    Noise,
    describe,
    determinants,
    judge,
    learn,
    move,
    verdicts,
)

INSTRUCTIONS, SECTORS, REQUESTS, L2_READ, DRAM_READ = WORK_COUNTERS
KIB_64 = 64 * 1024


def test_every_work_counter_has_a_label_and_the_cache_counters_are_not_exact() -> None:
    assert set(WORK_LABELS) == set(WORK_COUNTERS)
    # What the caches did varies with the run: learned, never steady from the start.
    assert {INSTRUCTIONS, SECTORS, REQUESTS} == EXACT
    assert ABSOLUTE == {DRAM_READ: KIB_64}


# --- determinants ------------------------------------------------------------------------------


def test_without_the_runners_digest_nothing_is_known_to_determine_a_kernel() -> None:
    figures = {"launch__grid_size": {"value": 132}}
    assert determinants(None, figures) is None
    assert determinants("", figures) is None


def test_the_launch_figures_follow_the_digest_in_a_fixed_order() -> None:
    # In LAUNCH's order whatever the mapping's; a figure ncu did not report is left empty.
    figures = {"launch__block_size": {"value": 256}, "launch__grid_size": {"value": 132}}
    assert LAUNCH[:2] == ("launch__grid_size", "launch__block_size")
    assert determinants("d1", figures) == "d1:132,256,,,"
    assert determinants("d1", {}) == "d1:,,,,"


# --- move --------------------------------------------------------------------------------------


def test_a_move_is_relative_and_has_no_sign() -> None:
    assert move(INSTRUCTIONS, 100.0, 103.0) == pytest.approx(0.03)
    assert move(INSTRUCTIONS, 100.0, 97.0) == pytest.approx(0.03)
    assert move(INSTRUCTIONS, 0.0, 0.0) == 0.0


def test_a_move_from_zero_to_anything_is_infinite() -> None:
    assert move(INSTRUCTIONS, 0.0, 1.0) == math.inf


def test_dram_bytes_within_64_kib_do_not_move() -> None:
    # 64 KiB on a 1 MiB read is 6.25%, still no move; one byte more is.
    assert move(DRAM_READ, 1 << 20, (1 << 20) + KIB_64) == 0.0
    assert move(DRAM_READ, 1 << 20, (1 << 20) + KIB_64 + 1) == pytest.approx((KIB_64 + 1) / 2**20)
    # From zero too: a few sectors where there were none are no move.
    assert move(DRAM_READ, 0.0, KIB_64) == 0.0
    assert move(DRAM_READ, 0.0, KIB_64 + 1) == math.inf
    # Other counters have no absolute tolerance: a single instruction more moves.
    assert move(INSTRUCTIONS, 1e6, 1e6 + 1) == pytest.approx(1e-6)


# --- learn -------------------------------------------------------------------------------------


def test_moves_between_pairs_give_the_largest_and_their_root_mean_square() -> None:
    history = [
        Capture("k", "c0", {L2_READ: 1000.0}),
        Capture("k", "c1", {L2_READ: 1010.0}),  # +1% on 1000
        Capture("k", "c2", {L2_READ: 1010.0 * 0.98}),  # -2% on 1010
    ]
    noise = learn(history)[L2_READ]
    assert (noise.pairs, noise.largest) == (2, pytest.approx(0.02))
    assert noise.rms == pytest.approx(math.sqrt((0.01**2 + 0.02**2) / 2))


def test_each_capture_pairs_with_the_last_one_of_equal_determinants() -> None:
    # A kernel launched on two grids in turn: A, B, A, B. Only A with A and B with B pair,
    # across the other's capture between them; nothing pairs A with B (10% apart).
    history = [
        Capture("A", "c0", {INSTRUCTIONS: 100.0}),
        Capture("B", "c1", {INSTRUCTIONS: 110.0}),
        Capture("A", "c2", {INSTRUCTIONS: 100.0}),
        Capture("B", "c3", {INSTRUCTIONS: 110.0}),
    ]
    noise = learn(history)[INSTRUCTIONS]
    assert (noise.pairs, noise.largest, noise.rms) == (2, 0.0, 0.0)


def test_a_capture_without_its_commit_teaches_nothing() -> None:
    history = [Capture("k", "c0", {L2_READ: 100.0}), Capture("k", None, {L2_READ: 150.0})]
    assert learn(history)[L2_READ].pairs == 0
    assert learn([*history[:1], Capture("k", "", {L2_READ: 150.0})])[L2_READ].pairs == 0


def test_a_counter_only_one_capture_of_a_pair_has_is_not_learned_from_it() -> None:
    history = [
        Capture("k", "c0", {INSTRUCTIONS: 100.0, L2_READ: 50.0}),
        Capture("k", "c1", {INSTRUCTIONS: 100.0}),
    ]
    learned = learn(history)
    assert learned[INSTRUCTIONS].pairs == 1 and learned[L2_READ].pairs == 0
    # Every work counter is in the answer, learned or not.
    assert set(learned) == set(WORK_COUNTERS)


def test_a_counter_that_once_moved_from_zero_has_no_finite_bound() -> None:
    history = [
        Capture("k", "c0", {L2_READ: 0.0}),
        Capture("k", "c1", {L2_READ: 10.0}),
        Capture("k", "c2", {L2_READ: 10.0}),
    ]
    noise = learn(history)[L2_READ]
    assert (noise.pairs, noise.largest, noise.rms) == (2, math.inf, math.inf)
    assert noise.tolerance() == math.inf


# --- tolerance and steadiness ------------------------------------------------------------------


def test_without_pairs_or_moves_the_tolerance_is_the_counters_floor() -> None:
    assert Noise(L2_READ, 0, 0.0).tolerance() == WORK_COUNTERS[L2_READ] == 0.001
    assert Noise(DRAM_READ, 5, 0.0, 0.0).tolerance() == WORK_COUNTERS[DRAM_READ] == 0.005
    # Moves far under the floor: the bound (about 4 x 1e-5) is below it, the floor stands.
    assert Noise(L2_READ, 20, 1e-5, 1e-5).tolerance() == 0.001


def test_many_pairs_bound_the_next_move_at_the_normal_two_sided_quantile() -> None:
    # With 10,000 degrees of freedom Student's t is the normal: 1 - 0.0001 / 2 is at 3.8906.
    assert Noise(L2_READ, 10_000, 0.05, 0.01).tolerance() == pytest.approx(0.038906, rel=1e-3)


def test_fewer_pairs_know_the_noise_less_and_bound_the_next_move_wider() -> None:
    bounds = [Noise(L2_READ, n, 0.01, 0.01).tolerance() for n in (3, 5, 10, 100)]
    assert bounds == sorted(bounds, reverse=True) and len(set(bounds)) == 4
    assert bounds[-1] > 3.89 * 0.01


@pytest.mark.parametrize(
    ("counter", "pairs", "steady"),
    [
        (L2_READ, MIN_PAIRS - 1, False),
        (L2_READ, MIN_PAIRS, True),
        (DRAM_READ, MIN_PAIRS - 1, False),
        (DRAM_READ, MIN_PAIRS, True),
        (INSTRUCTIONS, 0, True),  # counted, not sampled: steady from the start
        (SECTORS, 0, True),
        (REQUESTS, 0, True),
    ],
)
def test_a_counter_is_steady_once_shown_or_when_exact(
    counter: str, pairs: int, steady: bool
) -> None:
    assert Noise(counter, pairs, 0.0).steady is steady


# --- judge and verdicts ------------------------------------------------------------------------


def test_a_move_is_judged_against_the_tolerance_on_each_side_of_it() -> None:
    steady = Noise(INSTRUCTIONS, 0, 0.0)
    same = judge(INSTRUCTIONS, 1e6, 1e6 * 1.0009, steady)  # 0.09% < the 0.1% floor
    assert (same.verdict, same.tolerance) == ("same", 0.001)
    assert same.change == pytest.approx(0.0009)
    assert judge(INSTRUCTIONS, 1e6, 1e6 * 1.0011, steady).verdict == "changed"
    assert judge(INSTRUCTIONS, 1e6, 1e6 * 0.9989, steady).verdict == "changed"  # fewer too


def test_dram_bytes_within_their_absolute_tolerance_are_the_same_however_large_the_ratio() -> None:
    # 1 MiB -> 1 MiB + 64 KiB is +6.25%, beyond the 0.5% floor, yet the same.
    steady = Noise(DRAM_READ, MIN_PAIRS, 0.0)
    judged = judge(DRAM_READ, 1 << 20, (1 << 20) + KIB_64, steady)
    assert judged.verdict == "same" and judged.change == pytest.approx(0.0625)


def test_a_counter_still_learning_shows_its_change_but_no_tolerance() -> None:
    learning = judge(L2_READ, 100.0, 150.0, Noise(L2_READ, MIN_PAIRS - 1, 0.01, 0.01))
    assert (learning.verdict, learning.tolerance, learning.pairs) == ("learning", None, 2)
    assert learning.change == pytest.approx(0.5)


def test_without_noise_a_counter_has_no_pairs_exact_ones_are_judged_at_once() -> None:
    assert judge(L2_READ, 100.0, 150.0, None).verdict == "learning"
    judged = judge(INSTRUCTIONS, 100.0, 150.0, None)
    assert (judged.verdict, judged.pairs, judged.tolerance) == ("changed", 0, 0.001)


def test_a_counter_without_a_base_is_new() -> None:
    judged = judge(INSTRUCTIONS, None, 5.0, Noise(INSTRUCTIONS, 4, 0.0))
    assert (judged.verdict, judged.base, judged.change, judged.tolerance) == (
        "new",
        None,
        None,
        None,
    )
    assert judged.pairs == 4


def test_verdicts_follow_the_counters_order_and_skip_what_the_head_lacks() -> None:
    head = {DRAM_READ: 5e8, INSTRUCTIONS: 1e6, "gpu__time_duration.sum": 5e3}
    base = {INSTRUCTIONS: 1e6}  # no DRAM bytes at the base: that one is new
    found = verdicts(base, head)
    assert [(v.counter, v.verdict) for v in found] == [(INSTRUCTIONS, "same"), (DRAM_READ, "new")]


def test_verdicts_use_each_counters_own_noise() -> None:
    noise = {L2_READ: Noise(L2_READ, MIN_PAIRS, 0.0)}
    found = verdicts({L2_READ: 100.0, DRAM_READ: 1e9}, {L2_READ: 110.0, DRAM_READ: 1.1e9}, noise)
    # L2 reads were shown steady; DRAM bytes have no noise given: still learning.
    assert [(v.counter, v.verdict) for v in found] == [
        (L2_READ, "changed"),
        (DRAM_READ, "learning"),
    ]


def test_a_decrease_reads_with_its_sign() -> None:
    assert describe("DRAM bytes read", -0.025) == "DRAM bytes read -2.5%"
    assert describe("instructions executed", 0.0) == "instructions executed +0.0%"

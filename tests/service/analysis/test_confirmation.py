"""The rule a re-measured regression must pass, on plain arrays: slower by a one-sided rank test
at the alpha it is judged at, and by more than its duration class's floor."""

from __future__ import annotations

import numpy as np

from service.analysis.confirmation import ALPHA, remeasure, separated


def test_slower_needs_significance_and_more_than_the_class_floor() -> None:
    rng = np.random.default_rng(7)
    base = 100.0 * (1 + 0.002 * rng.standard_normal(30))
    slower = remeasure([base * 1.03], [base])  # 3%: beyond the 1% floor of a 100 us kernel
    assert slower.slower and slower.change > 0.029 and slower.p_value < ALPHA
    within = remeasure([base * 1.005], [base])  # significant, but within the floor
    assert within.p_value < ALPHA and not within.slower
    faster = remeasure([base * 0.97], [base])
    assert not faster.slower and faster.p_value > 0.5  # one-sided: a faster head is no regression


def test_the_alpha_is_the_callers_corrected_one() -> None:
    """Four alerts confirmed by one job: each at a quarter of the alpha. A 10 us kernel's eight
    samples 1% apart, 4% slower at the head: p = 0.0043, significant alone, not as one of four."""
    base = np.array([10.0 * (1 + 0.01 * i) for i in range(8)])
    measured = remeasure([base * 1.04], [base])
    assert ALPHA / 4 < measured.p_value <= ALPHA, measured.p_value
    assert measured.slower and not remeasure([base * 1.04], [base], ALPHA / 4).slower


def test_processes_on_two_levels_are_no_slowdown_unless_every_head_process_is_slower() -> None:
    """A launch whose processes land on one of two levels 3% apart, each process's samples
    within 0.2% (issue 52's tmatmul): the head's processes landed high, high, low and the base's
    low, low, high. Its samples differ by the gap at a tiny p; it is no slowdown. A real +8%
    on top of those levels is one: every head process is slower than every base process."""
    rng = np.random.default_rng(3)

    def side(levels: list[float]) -> list[np.ndarray]:
        return [level * (1 + 0.002 * rng.standard_normal(40)) for level in levels]

    low, high = 244.8, 248.7
    head, base = side([high, high, low]), side([low, low, high])
    luck = remeasure(head, base)
    assert luck.p_value < 1e-4 and luck.change > 0.01  # what the samples alone would confirm
    assert not separated(head, base) and not luck.slower
    real = remeasure(side([high * 1.08, low * 1.08, high * 1.08]), base)
    assert real.slower and 0.06 < real.change < 0.10
    # Processes that agree (within 0.5%): the samples are the unit, as before.
    steady = side([100.0, 100.1, 99.95])
    assert separated([p * 1.03 for p in steady], side([100.0, 100.2, 100.1]))


def test_a_faster_head_is_found_faster_by_the_mirror_rule() -> None:
    """A pending speed-up's rerun: faster by the one-sided test the other way, beyond the
    floor; slower stays false. Within the floor it is neither."""
    rng = np.random.default_rng(5)
    base = [100.0 * (1 + 0.002 * rng.standard_normal(30)) for _ in range(3)]
    found = remeasure([b * 0.9 for b in base], base)
    assert found.faster and not found.slower and found.state == "faster"
    assert found.p_found == found.p_faster < ALPHA and found.p_value > 0.5
    within = remeasure([b * 0.996 for b in base], base)
    assert within.state == "not_reproduced" and within.p_found == within.p_value

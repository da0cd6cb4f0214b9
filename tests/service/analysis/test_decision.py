"""Deciding a run's series from their comparisons (service.analysis.decision), on hand-made
Comparisons: Benjamini-Hochberg across the run's series at q, the effect floor on each side, a
young level's pending change and how the next run settles it (stayed, back, moved), and a verdict
that one control's offset alone would flip, which waits for the next run and is then kept or
dropped by whether that run stays beyond the changed reading's floor."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.analysis.decision import decide, settlement
from service.analysis.verdicts import Comparison, Q


def comparison(change: float, p_value: float = 1e-6, floor: float = 0.05, **kw) -> Comparison:
    """A series at 100 us whose head moved by `change` against five baseline runs."""
    return Comparison(0, change, floor, p_value, 100 * (1 + change), 100.0, 5, **kw)


def verdict(c: Comparison) -> str:
    (d,) = decide([c])
    return d.verdict


def test_no_comparisons_no_decisions() -> None:
    assert decide([]) == []


def test_q_values_are_benjamini_hochberg_across_the_run() -> None:
    # Sorted p * n / rank, then the running minimum from the largest rank down:
    # 0.001 * 3 / 1 = 0.003, 0.02 * 3 / 2 = 0.03, 0.5 * 3 / 3 = 0.5.
    found = decide([comparison(0.1, 0.5), comparison(0.1, 0.001), comparison(0.1, 0.02)])
    assert [d.q_value for d in found] == pytest.approx([0.5, 0.003, 0.03])
    assert [d.verdict for d in found] == ["unchanged", "regressed", "unchanged"]


def test_a_larger_p_value_can_carry_a_smaller_one_through() -> None:
    # Step-up: 0.004 alone among two has 0.004 * 2 = 0.008, but 0.006 * 2 / 2 = 0.006 is the
    # smaller, and a rank's q-value is never above a later rank's: both are 0.006, both pass.
    found = decide([comparison(0.1, 0.004), comparison(0.1, 0.006)])
    assert [d.q_value for d in found] == pytest.approx([0.006, 0.006])
    assert [d.verdict for d in found] == ["regressed", "regressed"]


def test_q_at_the_threshold_passes_and_just_above_it_does_not() -> None:
    # One series: its q-value is its p-value. Rejected only where q > Q.
    assert verdict(comparison(0.1, Q)) == "regressed"
    assert verdict(comparison(0.1, Q * 1.001)) == "unchanged"
    # A run may ask for another q.
    (d,) = decide([comparison(0.1, 0.03)], q=0.05)
    assert d.verdict == "regressed"


def test_a_change_must_exceed_the_floor_on_its_side() -> None:
    # A certain change (p ~ 0) at the floor is no verdict: it must be beyond it.
    assert verdict(comparison(0.05)) == "unchanged"
    assert verdict(comparison(0.0501)) == "regressed"
    assert verdict(comparison(-0.05)) == "unchanged"
    assert verdict(comparison(-0.0501)) == "improved"
    assert verdict(comparison(0.0)) == "unchanged"


def test_a_young_levels_change_is_pending_until_a_next_run() -> None:
    (d,) = decide([comparison(0.1, young=True)])
    assert (d.verdict, d.settled) == ("pending", None)
    # Under the floor there is nothing to wait for, young or not.
    (d,) = decide([comparison(0.02, young=True)])
    assert (d.verdict, d.settled) == ("unchanged", None)


@pytest.mark.parametrize(
    ("next_change", "verdict_", "settled"),
    [
        (0.12, "regressed", "stayed"),  # further on, same side
        (0.06, "regressed", "stayed"),  # just beyond the floor, same side
        (0.05, "unchanged", "back"),  # at the floor: within it
        (0.0, "unchanged", "back"),
        (-0.05, "unchanged", "back"),
        (-0.06, "unchanged", "moved"),  # beyond the floor the other way
    ],
)
def test_the_next_run_settles_a_young_levels_regression(
    next_change: float, verdict_: str, settled: str
) -> None:
    (d,) = decide([comparison(0.1, young=True, next_change=next_change)])
    assert (d.verdict, d.settled) == (verdict_, settled)


def test_settlement_reads_an_improvement_on_its_own_side() -> None:
    faster = comparison(-0.1, young=True)
    assert settlement(replace(faster, next_change=-0.08)) == "stayed"
    assert settlement(replace(faster, next_change=-0.04)) == "back"
    assert settlement(replace(faster, next_change=0.08)) == "moved"
    (d,) = decide([replace(faster, next_change=-0.08)])
    assert (d.verdict, d.settled) == ("improved", "stayed")


def test_an_old_levels_verdict_is_not_settled_by_a_next_run() -> None:
    (d,) = decide([comparison(0.1, next_change=0.0)])
    assert (d.verdict, d.settled) == ("regressed", None)


def sole(net_change: float, raw_change: float, next_raw: float | None) -> Comparison:
    """A series whose offset one control measured: `net_change` with it taken out,
    `raw_change` as measured (its floor 0.05 both ways)."""
    raw = comparison(raw_change, sole_control=9, next_raw=next_raw)
    return comparison(net_change, alternative=raw, sole_control=9, next_raw=next_raw)


def test_readings_that_agree_are_decided_as_one() -> None:
    (d,) = decide([sole(0.08, 0.07, None)])
    assert (d.verdict, d.sole, d.other) == ("regressed", None, None)


def test_a_verdict_one_control_alone_flips_waits_for_the_next_run() -> None:
    # Net of the control's offset +8%, as measured +4%: the verdicts differ and no next run.
    c = sole(0.08, 0.04, None)
    (d,) = decide([c])
    assert (d.verdict, d.sole) == ("pending", "waits")
    # The pending decision is the reading as measured; the corrected one beside it.
    assert d.comparison is c.alternative and d.other is c


@pytest.mark.parametrize(
    ("next_raw", "verdict_", "sole_", "kept"),
    [
        (0.07, "regressed", "stayed", "net"),  # beyond the changed reading's floor, same side
        (0.05, "unchanged", "back", "raw"),  # at the floor: it did not stay
        (-0.07, "unchanged", "back", "raw"),  # beyond the floor, other side: not a stay
    ],
)
def test_the_next_run_decides_a_verdict_one_control_flipped(
    next_raw: float, verdict_: str, sole_: str, kept: str
) -> None:
    c = sole(0.08, 0.04, next_raw)
    (d,) = decide([c])
    assert (d.verdict, d.sole) == (verdict_, sole_)
    readings = {"net": c, "raw": c.alternative}
    dropped = "raw" if kept == "net" else "net"
    assert d.comparison is readings[kept] and d.other is readings[dropped]


def test_a_change_the_control_would_take_away_stays_only_if_the_next_run_does() -> None:
    # As measured +9% (the run sat slow); net of the one control's offset +2%: the changed
    # reading is the measured one, and the next run is read against its floor and side.
    c = sole(0.02, 0.09, 0.08)
    (d,) = decide([c])
    assert (d.verdict, d.sole, d.comparison, d.other) == ("regressed", "stayed", c.alternative, c)
    (d,) = decide([sole(0.02, 0.09, 0.01)])
    assert (d.verdict, d.sole) == ("unchanged", "back")


def test_the_reading_as_measured_has_its_own_p_value_and_q_value() -> None:
    # Net: certain; as measured the same size but p = 0.5: unchanged by q, so the readings
    # differ and the verdict waits. Its q-value is the measured reading's.
    raw = comparison(0.08, p_value=0.5, sole_control=9)
    (d,) = decide([comparison(0.08, alternative=raw, sole_control=9)])
    assert (d.verdict, d.sole) == ("pending", "waits")
    assert d.q_value == pytest.approx(0.5)

"""A run's common offset on plain arrays: measured by the run's controls (leave-one-out, per
group), taken out of the other series' changes and added to their tests' doubt; nothing taken
out where no control measured it."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from service.analysis import run_offset, wander
from service.analysis.decision import decide
from service.analysis.verdicts import compare_many
from tests.service.analysis.test_wander import candidate, run


def test_each_series_offset_is_what_the_other_controls_of_its_group_measured() -> None:
    """Leave-one-out per group, each control weighted by how little its runs wander, the median
    of what they measured; none without a control."""
    changes = [-0.03, -0.04, -0.05, 0.20, -0.05, math.nan]
    run_vars = [1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4]
    process_vars = [4e-5] * 6
    groups = ["short", "short", "short", "short", "long", "short"]
    controls = [True, True, True, False, True, True]
    found = run_offset.offsets(changes, run_vars, process_vars, groups, controls)
    # Of -0.04 and -0.05; what their wander leaves unknown of it: 1 / (1e4 + 1e4).
    assert found[0] == run_offset.Offset(-0.045, pytest.approx(2e-5), 2, pytest.approx(5e-5))
    assert found[3] is not None and found[3].log == pytest.approx(-0.04)  # of three controls
    assert found[3].var == pytest.approx(math.pi / 2 * 4e-5 / 3) and found[3].controls == 3
    assert found[4] is None  # the only control of its group
    assert found[5] is not None and found[5].controls == 3  # a control without a change: none
    assert (
        run_offset.offsets([0.1, 0.1], [1e-4] * 2, [1e-5] * 2, "aa", [False, False]) == [None] * 2
    )
    # A control that wanders on its own counts for little beside one that does not.
    weighted = run_offset.offsets([-0.04, 0.03, 0.0], [1e-4, 1e-2, 1], [0.0] * 3, "aaa",
                                  [True, True, False])  # fmt: skip
    assert weighted[2] is not None and weighted[2].log == pytest.approx(-0.04)


def test_an_offset_within_its_controls_own_wander_is_not_taken_out() -> None:
    """A spilling SGEMM whose runs wander by 2.5% sitting 2.7% low is no evidence that its run
    sat off: the others of its group keep what they measured."""
    found = run_offset.offsets([-0.027, 0.05], [0.025**2, 1e-4], [1e-4] * 2, "aa", [True, False])
    assert found[0] is None  # no other control
    assert found[1] is not None and not found[1].evident  # measured, not to be taken out
    steady = run_offset.offsets([-0.027, 0.05], [0.005**2, 1e-4], [1e-4] * 2, "aa", [True, False])
    assert steady[1] is not None and steady[1].evident
    assert steady[1].log == pytest.approx(-0.027)


def short_suite(rng: np.random.Generator, sat: float, changed: dict[int, float]):
    """Eight short kernels (processes 1% apart, samples 3%): eight baseline runs each, and a
    head run whose every process sat `sat` off, kernels in `changed` slower by that factor."""
    out = []
    for j in range(8):
        level = 3.5 + 0.25 * j
        base = [run(level, rng, processes=6, samples=60, process_sd=0.01, sample_sd=0.03)
                for _ in range(8)]  # fmt: skip
        head = run(level * sat * changed.get(j, 1.0), rng, processes=6, samples=60,
                   process_sd=0.01, sample_sd=0.03)  # fmt: skip
        out.append(replace(candidate(head, base), key=j, group="cupti", control=j not in changed))
    return out


def test_a_run_that_sat_off_is_measured_on_its_unchanged_kernels_and_taken_out() -> None:
    """All eight kernels' processes sat 4% fast; two got 12% slower: reported +12%, not +7.5%,
    the others near zero; without controls, the same run reports what it measured."""
    rng = np.random.default_rng(11)
    candidates = short_suite(rng, 0.96, {1: 1.12, 5: 1.12})
    corrected = compare_many(candidates)
    for j, c in enumerate(corrected):
        assert c is not None and c.controls == (6 if j in (1, 5) else 5)  # leave-one-out
        assert c.offset == pytest.approx(-0.04, abs=0.01)
        expected = 0.12 if j in (1, 5) else 0.0
        assert c.change == pytest.approx(expected, abs=0.02), (j, c.change)
    verdicts = [d.verdict for d in decide([c for c in corrected if c is not None])]
    assert [j for j, v in enumerate(verdicts) if v != "unchanged"] == [1, 5]
    assert {verdicts[1], verdicts[5]} == {"regressed"}
    plain = compare_many([replace(c, control=False) for c in candidates])
    assert all(p is not None and p.offset == 0.0 and p.controls == 0 for p in plain)
    assert plain[1].change == pytest.approx(1.12 * 0.96 - 1, abs=0.01)  # type: ignore[union-attr]


def test_an_offset_is_measured_per_group_and_not_by_a_young_level() -> None:
    """Controls of another timing method, or on a level of one run, measure nothing here."""
    rng = np.random.default_rng(12)
    candidates = short_suite(rng, 0.96, {1: 1.12})
    others = [replace(c, group="cuda_events") if c.key != 1 else c for c in candidates]
    assert compare_many(others)[1].offset == 0.0  # type: ignore[union-attr]
    young = [replace(c, baseline=c.baseline[:1], baseline_counts=c.baseline_counts[:1],
                     baseline_medians=c.baseline_medians[:1], noise_medians=c.baseline_medians[:1],
                     history=c.baseline_medians[:1]) if c.key != 1 else c
             for c in candidates]  # fmt: skip
    assert compare_many(young)[1].offset == 0.0  # type: ignore[union-attr]


def test_the_offsets_doubt_widens_the_test() -> None:
    """An offset measured by one control adds that control's doubt to the corrected change's:
    its p-value is larger than that of the same change with the offset known exactly."""
    rng = np.random.default_rng(13)
    pair = short_suite(rng, 0.96, {1: 1.06})[:2]  # a control and a kernel 6% slower
    corrected = compare_many(pair)[1]
    assert corrected is not None and corrected.controls == 1
    exact = compare_many([replace(pair[1], head=pair[1].head / (1 + corrected.offset))])[0]
    assert exact is not None and exact.change == pytest.approx(corrected.change)
    assert exact.p_value < corrected.p_value


def test_a_controls_own_wander_is_measured_apart_from_the_runs_it_shares() -> None:
    """Short kernels whose runs move 1.5% together and 0.2% apart: each one's own wander is
    the 0.2%, not the 1.5%; a kernel that wanders on its own keeps its spread; with fewer than
    MIN_SHARED runs beside others, nothing is known."""
    rng = np.random.default_rng(21)
    common = 0.015 * rng.standard_normal(10)
    together = [{r: common[r] + 0.002 * rng.standard_normal() for r in range(10)} for _ in range(3)]
    alone = {r: common[r] + 0.03 * rng.standard_normal() for r in range(10)}
    found = run_offset.apart_vars([*together, alone], ["short"] * 4)
    assert all(v is not None and math.sqrt(v) < 0.006 for v in found[:3]), found
    assert found[3] is not None and math.sqrt(found[3]) > 0.015
    assert math.sqrt(float(np.var(common))) > 0.008  # what the runs' own spread would say
    few = [{r: v for r, v in h.items() if r < run_offset.MIN_SHARED - 1} for h in together]
    assert run_offset.apart_vars(few, ["short"] * 3) == [None] * 3
    assert run_offset.apart_vars(together, ["a", "b", "c"]) == [None] * 3  # no group beside


def test_one_control_that_moves_with_its_runs_measures_the_runs_offset() -> None:
    """Two short kernels whose runs sat 1.5% apart from run to run, together; at the head both
    sat 2.5% fast and one got 12% slower. Its one control's 2.5% is within that run-to-run
    wander, so alone it is no evidence; set beside the same runs, the two moved as one (0.2%
    apart), and the offset is taken out: +12%, not +9%."""
    rng = np.random.default_rng(22)
    common = 1 + 0.015 * rng.standard_normal(8)
    runs = list(range(8))
    pair = []
    for key, level, slower in ((0, 3.5, 1.0), (1, 3.9, 1.12)):
        base = [run(level * c * (1 + 0.002 * rng.standard_normal()), rng, processes=6,
                    samples=60, process_sd=0.002, sample_sd=0.01) for c in common]  # fmt: skip
        head = run(level * 0.975 * slower, rng, processes=6, samples=60, process_sd=0.002,
                   sample_sd=0.01)  # fmt: skip
        c = candidate(head, base, history=[float(np.median(b[0])) for b in base][::-1])
        pair.append(replace(c, key=key, group="cupti", control=key == 0,
                            history_runs=runs[::-1]))  # fmt: skip
    corrected = compare_many(pair)[1]
    assert corrected is not None and corrected.controls == 1
    assert corrected.change == pytest.approx(0.12, abs=0.01)
    unknown = compare_many([replace(c, history_runs=()) for c in pair])[1]
    assert unknown is not None and unknown.controls == 0
    # What it measured against its level: the run's 2.5% (and the level's own offset) kept in.
    assert unknown.change == pytest.approx(0.975 * 1.12 / np.median(common) - 1, abs=0.01)
    assert abs(unknown.change - 0.12) > 0.01


@pytest.mark.parametrize("k", [2, 3, 4, 7, 8])
def test_each_values_others_median_is_the_median_without_it(k: int) -> None:
    rng = np.random.default_rng(k)
    for values in (rng.standard_normal(k), rng.integers(0, 3, k).astype(float)):  # ties too
        want = [np.median(np.delete(values, i)) for i in range(k)]
        assert run_offset.leave_one_out_medians(values) == pytest.approx(want)


def test_a_controls_change_is_read_against_the_runs_the_series_is_compared_with() -> None:
    """A kernel's young level has two runs, both 2.5% slow with the rest of their runs; at the
    head the run sat 4% fast and the kernel got 20% slower. Its control, read against those two
    runs, measures -6.3%, and the kernel reads +20%; read against its own long level (-4%), the
    kernel would read +17%. (Its control's own reading stays within its floor of 5%: beyond
    it, it would be a change of its own, and no control: run_offset.shared_controls.)"""
    rng = np.random.default_rng(31)
    sat = [1.0, 1.003, 0.997, 1.002, 0.998, 1.001, 1.025, 1.025]  # runs 0-7; the head 0.95
    runs = list(range(8))
    pair = []
    for key, level, slower, kept in ((0, 3.5, 1.0, runs), (1, 3.9, 1.2, runs[6:])):
        base = [run(level * s, rng, processes=6, samples=60, process_sd=0.002, sample_sd=0.01)
                for s in sat]  # fmt: skip
        head = run(level * 0.96 * slower, rng, processes=6, samples=60, process_sd=0.002,
                   sample_sd=0.01)  # fmt: skip
        history = [float(np.median(b[0])) for b in base][::-1]  # nearest first
        kept_base = [base[r] for r in kept][::-1]
        c = candidate(head, kept_base, history=history)
        pair.append(replace(c, key=key, group="cupti", control=key == 0, history_runs=runs[::-1],
                            baseline_runs=kept[::-1]))  # fmt: skip
    corrected = compare_many(pair)[1]
    assert corrected is not None and corrected.controls == 1
    assert corrected.offset == pytest.approx(0.96 / 1.025 - 1, abs=0.005)
    assert corrected.change == pytest.approx(0.20, abs=0.01)
    own_level = compare_many([replace(c, baseline_runs=()) for c in pair])[1]
    assert own_level is not None and own_level.offset == pytest.approx(-0.04, abs=0.005)
    assert own_level.change == pytest.approx(1.2 * 0.96 / 1.025 / 0.96 - 1, abs=0.01)  # +17%


def test_a_series_wander_apart_from_its_group_leaves_out_their_level_shifts() -> None:
    """Apart from the others' median, a kernel shifts wherever they do: three shifts among ten
    runs are three of nine steps, and the median step would be one of them. Left out, what
    remains is how far it wanders apart (0.3%), not 1%."""
    rng = np.random.default_rng(32)
    shifts = np.array([0, 0, 0, 0.18, 0.18, 0.18, 0.18, 0, 0, 0.15])
    apart = shifts + 0.003 * rng.standard_normal(10)
    assert wander.successive_spread(apart) > 0.006  # the shifts among the steps
    assert run_offset.shift_free_spread(apart) == pytest.approx(0.003, abs=0.0015)
    steady = 0.003 * rng.standard_normal(10)  # no shift: both the same
    assert run_offset.shift_free_spread(steady) == wander.successive_spread(steady)
    assert run_offset.shift_free_spread(np.array([0.01])) == 0.0


def test_a_control_whose_reading_is_a_change_of_its_own_measures_no_offset() -> None:
    """One of three long controls stepped 6% (a synchronize in its launch: its kernels' code,
    launch and inputs the same): it is left out and the other two measure nothing. Of two, the
    one left alone is judged on its own reading. A run that sat off together keeps all."""
    tight = [1e-6] * 4
    stepped = run_offset.shared_controls([0.0, 0.001, 0.058, 0.0], tight, [False, False, True,
                                         False], "aaaa", [True, True, True, False])  # fmt: skip
    assert stepped == [True, True, False, False]
    found = run_offset.offsets([0.0, 0.001, 0.058, 0.03], tight, [1e-7] * 4, "aaaa",
                               [True, True, True, False], changed=[False, False, True,
                                                                   False])  # fmt: skip
    assert found[3] is not None and found[3].controls == 2 and not found[3].evident
    # Two that disagree: the one whose own reading is a change goes.
    assert run_offset.shared_controls([0.0, 0.058], tight[:2], [False, True], "aa",
                                      [True, True]) == [True, False]  # fmt: skip
    assert run_offset.shared_controls([0.058, 0.0], tight[:2], [True, False], "aa",
                                      [True, True]) == [False, True]  # fmt: skip
    # Alone: kept while its own reading is within its floor, not where it is a change.
    assert run_offset.shared_controls([0.058], [1e-6], [True], "a", [True]) == [False]
    assert run_offset.shared_controls([0.008], [1e-6], [False], "a", [True]) == [True]
    together = run_offset.shared_controls([-0.04, -0.041, -0.039], tight[:3], [True] * 3, "aaa",
                                          [True] * 3)  # fmt: skip
    assert together == [True] * 3  # each a change alone, not apart from the others
    (one,) = run_offset.offsets([-0.02, 0.05], [1e-6, 1e-6], [1e-7] * 2, "aa", [True, False],
                                targets=[1])  # fmt: skip
    assert one is not None and one.controls == 1 and one.sole == 0


def sole_control_pair(head_sat: float, changed: float, own: float = 1.0,
                      later: float | None = None) -> list:  # fmt: skip
    """Two short kernels whose runs wander 2% together and 0.2% apart: a control (key 0) and a
    kernel a commit may change (key 1); the head run sat `head_sat` off, the kernel is `changed`
    slower and the control `own` (a move of its own); `later`: the kernel's next run."""
    rng = np.random.default_rng(41)
    sat = [1.0, 1.02, 0.985, 1.015, 0.98, 1.01, 0.99, 1.02]
    runs = list(range(8))[::-1]
    out = []
    for key, level, slower in ((0, 3.5, own), (1, 3.9, changed)):
        base = [run(level * s, rng, processes=6, samples=60, process_sd=0.002, sample_sd=0.01)
                for s in sat][::-1]  # fmt: skip
        head = run(level * head_sat * slower, rng, processes=6, samples=60, process_sd=0.002,
                   sample_sd=0.01)  # fmt: skip
        c = candidate(head, base, later=level * later if key == 1 and later else None)
        out.append(replace(c, key=key, group="cupti", control=key == 0, history_runs=runs,
                           baseline_runs=runs))  # fmt: skip
    return out


@pytest.mark.parametrize(
    ("later", "verdict", "sole"),
    [(None, "pending", "waits"), (1.08, "regressed", "stayed"), (1.0, "unchanged", "back")],
)
def test_a_verdict_one_control_would_flip_waits_for_the_next_run(
    later: float | None, verdict: str, sole: str
) -> None:
    """The run sat 3% fast and the kernel got 8% slower: +4.2% as measured (under its floor),
    +7.9% net of what its one control measured. One control's word flips no verdict: pending,
    then changed where the next run stays beyond the floor, unchanged where it does not."""
    comparisons = compare_many(sole_control_pair(0.97, 1.08, later=later))
    changed = comparisons[1]
    assert changed is not None and changed.controls == 1 and changed.sole_control == 0
    assert changed.change == pytest.approx(0.08, abs=0.01)
    assert changed.alternative is not None
    assert changed.alternative.change == pytest.approx(1.08 * 0.97 - 1, abs=0.01)
    decision = decide([c for c in comparisons if c is not None])[1]
    assert (decision.verdict, decision.sole) == (verdict, sole)


def test_a_control_that_moved_on_its_own_within_its_floor_flips_nothing() -> None:
    """The control's host code made it 5.5% faster (its kernels the same; within its own floor
    of 9%): the unchanged kernel beside it would read +5.7% net of that offset. It waits, and
    its next run, back at its level, leaves it unchanged; before the rule it was regressed."""
    waiting = decide([c for c in compare_many(sole_control_pair(1.0, 1.0, own=0.945)) if c])
    assert (waiting[0].verdict, waiting[1].verdict) == ("unchanged", "pending")
    settled = decide([c for c in compare_many(sole_control_pair(1.0, 1.0, 0.945, 1.0)) if c])
    assert (settled[1].verdict, settled[1].sole) == ("unchanged", "back")
    assert settled[1].comparison.controls == 0  # as measured: nothing taken out

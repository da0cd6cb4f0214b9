"""Each series' run offset as the run's controls measure it (service.analysis.run_controls), on
hand-made candidates and units: a series' earlier run medians by run (`history_logs`); which
series are controls (marked so, tested, on a level that is not young); a control's change read
against the runs the series it corrects is compared with, where they are among its own
baseline's, else against its own baseline (`control_change`); and what `run_offsets` makes of
them: leave-one-out offsets, variances from the controls' processes and wander (its own wander
apart from its group's runs where that is smaller), and candidate indices, not positions, in
`sole` and `changed`."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np
import pytest

from service.analysis import run_offset, wander
from service.analysis.candidate import Candidate
from service.analysis.run_controls import Unit, control_change, history_logs, run_offsets

PROCESSES = 4
TESTED = wander.LevelTest(statistic=0.0, df=4, p_value=1.0, se=0.01)


def level(run_var: float = 1e-5, process_var: float = 4e-5, young: bool = False) -> wander.Wander:
    return wander.Wander(process_var, 12, run_var, 6, float(PROCESSES), young)


def series(
    head: float, base: Sequence[float], *, control: bool = False, **kw: object
) -> tuple[Candidate, Unit]:
    """A series whose every process of the head sat at `head` and of each baseline run at its
    entry of `base`."""
    c = Candidate(
        0,
        np.full(3 * PROCESSES, head),
        [np.full(3 * PROCESSES, m) for m in base],
        control=control,
        **kw,  # type: ignore[arg-type]
    )
    logs = np.full(PROCESSES, math.log(head))
    unit: Unit = (logs, [np.full(PROCESSES, math.log(m)) for m in base], list(base), level())
    return c, unit


def offsets(
    made: list[tuple[Candidate, Unit]],
    usable: list[int] | None = None,
    tests: dict[int, wander.LevelTest | None] | None = None,
    own: dict[int, float | None] | None = None,
    changed: Sequence[int] = (),
) -> dict[int, run_offset.Offset]:
    """run_offsets over `made` (all usable, one group, every one tested, no wander apart from
    the group known) unless told otherwise."""
    candidates = [c for c, _ in made]
    usable = list(range(len(made))) if usable is None else usable
    units = {i: made[i][1] for i in usable}
    tests = {i: TESTED for i in usable} | (tests or {})
    own = {i: None for i in usable} | (own or {})
    groups: list[Hashable] = ["short"] * len(usable)
    logs = [history_logs(candidates[i]) for i in usable]
    return run_offsets(candidates, usable, units, tests, groups, own, logs, changed)


# --- history_logs ------------------------------------------------------------------------------


def test_history_logs_are_the_log_of_each_runs_median() -> None:
    c = Candidate(0, np.ones(3), [], history=[2.0, 4.0], history_runs=["r2", "r1"])
    assert history_logs(c) == pytest.approx({"r2": math.log(2.0), "r1": math.log(4.0)})


def test_history_logs_without_their_runs_are_none() -> None:
    # Runs unknown (or not one per median): nothing can be set beside the same runs of others.
    assert history_logs(Candidate(0, np.ones(3), [], history=[2.0, 4.0])) == {}
    short = Candidate(0, np.ones(3), [], history=[2.0, 4.0], history_runs=["r2"])
    assert history_logs(short) == {}
    assert history_logs(Candidate(0, np.ones(3), [])) == {}


def test_a_median_that_is_no_duration_has_no_log() -> None:
    c = Candidate(0, np.ones(3), [], history=[2.0, 0.0, -1.0], history_runs=["a", "b", "c"])
    assert history_logs(c) == pytest.approx({"a": math.log(2.0)})


# --- control_change ----------------------------------------------------------------------------

RUNS = ("r1", "r2", "r3", "r4")


def control() -> tuple[Candidate, Unit]:
    """A control at 100 whose baseline runs r1-r4 sat at 100, 100, 102.5, 102.5 (a young level's
    runs, r3 and r4, carried their own offsets), with r0 before them at another level."""
    return series(
        100.0,
        [100.0, 100.0, 102.5, 102.5],
        control=True,
        baseline_runs=RUNS,
        history=[102.5, 102.5, 100.0, 100.0, 95.0],
        history_runs=["r4", "r3", "r2", "r1", "r0"],
    )


def test_a_controls_change_is_read_against_the_runs_the_series_is_compared_with() -> None:
    c, unit = control()
    # Against r3 and r4 only: the median of their logs is log(102.5), two runs.
    change, runs = control_change(c, unit, history_logs(c), ("r3", "r4"))
    assert change == pytest.approx(math.log(100 / 102.5)) and runs == 2


@pytest.mark.parametrize(
    "runs_of",
    [
        (),  # the series' runs are unknown
        ("r3", "r9"),  # the control was not measured in r9
        ("r0", "r1"),  # r0 is before its baseline: a shift of its own may lie between
    ],
)
def test_otherwise_a_controls_change_is_read_against_its_own_baseline(
    runs_of: tuple[str, ...],
) -> None:
    c, unit = control()
    change, runs = control_change(c, unit, history_logs(c), runs_of)
    # The median of its baseline medians 100, 100, 102.5, 102.5 is 101.25; four runs.
    assert change == pytest.approx(math.log(100 / 101.25)) and runs == 4


def test_its_whole_baseline_reads_the_same_either_way() -> None:
    # Three runs (an odd number): the median of the logs is the log of the median, so reading
    # against the same runs and against its own baseline must agree.
    c, unit = series(
        100.0, [99.0, 101.0, 104.0], control=True, baseline_runs=("a", "b", "c"),
        history=[104.0, 101.0, 99.0], history_runs=["c", "b", "a"],
    )  # fmt: skip
    change, runs = control_change(c, unit, history_logs(c), ("a", "b", "c"))
    assert change == pytest.approx(math.log(100 / 101.0)) and runs == 3


def test_a_control_that_is_no_duration_measures_nothing() -> None:
    c, unit = control()
    change, runs = control_change(replace(c, head=np.zeros(6)), unit, history_logs(c), ())
    assert math.isnan(change) and runs == 0
    zero_base = (unit[0], unit[1], [0.0, 0.0], unit[3])
    change, runs = control_change(c, zero_base, {}, ())
    assert math.isnan(change) and runs == len(unit[1])


# --- run_offsets -------------------------------------------------------------------------------


def test_each_series_offset_is_measured_by_the_other_controls() -> None:
    # Three controls 2.5%, 3% and 3.5% slow against their baselines (as steady as each other,
    # so equally weighted), a changed series 10% slow: its offset is their median, 3%.
    slow = [1.025, 1.03, 1.035]
    made = [series(100.0 * s, [100.0] * 4, control=True) for s in slow]
    made.append(series(110.0, [100.0] * 4))
    found = offsets(made)
    assert found[3].log == pytest.approx(math.log(1.03)) and found[3].controls == 3
    assert found[3].sole is None
    # Leave-one-out: a control is measured by the two others (the mean of two is their
    # median), never by itself.
    logs = [math.log(s) for s in slow]
    for i in range(3):
        others = [x for j, x in enumerate(logs) if j != i]
        assert found[i].log == pytest.approx(sum(others) / 2) and found[i].controls == 2


@pytest.mark.parametrize(
    ("candidate", "level_", "tested"),
    [
        ({"control": False}, level(), TESTED),  # not marked a control by the caller
        ({}, level(young=True), TESTED),  # its level does not know its wander yet
        ({}, level(), None),  # not tested on processes
    ],
)
def test_only_a_marked_tested_settled_series_is_a_control(
    candidate: dict, level_: wander.Wander, tested: wander.LevelTest | None
) -> None:
    c, unit = series(97.0, [100.0] * 4, control=True)
    made = [(replace(c, **candidate), (*unit[:3], level_)), series(110.0, [100.0] * 4)]
    assert offsets(made, tests={0: tested}) == {}
    assert set(offsets([(c, unit), made[1]])) == {1}  # the same series as a control


def test_one_controls_offset_has_its_processes_doubt_and_its_wander() -> None:
    made = [series(97.0, [100.0] * 4, control=True), series(110.0, [100.0] * 4)]
    (only,) = offsets(made).values()
    assert only.log == pytest.approx(math.log(0.97)) and only.controls == 1
    # What its processes leave unknown of its change: 4e-5 x (1/4 head processes + 1/(4 runs
    # x 4 processes)) = 1.25e-5; one control, so that is the offset's.
    assert only.var == pytest.approx(4e-5 * (1 / 4 + 1 / 16))
    # Its wander: its run variance 1e-5 for the head, a quarter of it for four baseline runs.
    assert only.spread == pytest.approx(1e-5 * (1 + 1 / 4))


def test_a_controls_wander_apart_from_its_group_counts_where_it_is_smaller() -> None:
    # 3% off with runs that wander by 2% (variance 4e-4): 2 x sqrt(4e-4 x 1.25) = 4.5% > 3%,
    # no evidence; kept within 0.3% of its group's runs (1e-5): 0.7%, evidence.
    c, unit = series(97.0, [100.0] * 4, control=True)
    made = [(c, (*unit[:3], level(run_var=4e-4))), series(110.0, [100.0] * 4)]
    wandering = offsets(made)[1]
    assert wandering.spread == pytest.approx(4e-4 * 1.25) and not wandering.evident
    steady = offsets(made, own={0: 1e-5})[1]
    assert steady.spread == pytest.approx(1e-5 * 1.25) and steady.evident
    # A wander apart larger than its runs' own counts for nothing: the smaller one stands.
    assert offsets(made, own={0: 1e-2})[1].spread == pytest.approx(4e-4 * 1.25)


def test_each_series_is_corrected_by_the_controls_change_against_its_own_runs() -> None:
    made = [
        control(),
        series(110.0, [100.0] * 2, baseline_runs=("r3", "r4")),  # a young level's two runs
        series(110.0, [100.0] * 4),  # runs unknown
        series(110.0, [100.0] * 2, baseline_runs=("r0", "r1")),  # beyond the control's level
    ]
    found = offsets(made)
    assert found[1].log == pytest.approx(math.log(100 / 102.5))
    assert found[2].log == pytest.approx(math.log(100 / 101.25))
    assert found[3].log == pytest.approx(math.log(100 / 101.25))
    # Read against two runs, the control's wander weighs (1 + 1/2); against its four, 1 + 1/4.
    assert found[1].spread == pytest.approx(1e-5 * 1.5)
    assert found[2].spread == pytest.approx(1e-5 * 1.25)
    assert 0 not in found  # the control has no other control to measure it


def test_a_sole_control_is_named_by_its_candidate_index() -> None:
    # Candidates 0 and 2 are not usable (too little baseline, say): positions in `usable` are
    # not candidate indices.
    unusable = series(100.0, [100.0])
    made = [unusable, series(110.0, [100.0] * 4), unusable, series(97.0, [100.0] * 4, control=True)]
    found = offsets(made, usable=[1, 3])
    assert set(found) == {1} and found[1].sole == 3


def test_a_lone_control_whose_own_reading_is_a_change_measures_nothing() -> None:
    unusable = series(100.0, [100.0])
    made = [unusable, series(110.0, [100.0] * 4), unusable, series(97.0, [100.0] * 4, control=True)]
    # `changed` names candidates: 3 is the control, left alone, so it measures nothing.
    assert offsets(made, usable=[1, 3], changed={3}) == {}
    # Candidate 1 is the corrected series, no control: its change takes no control away. Were
    # `changed` read as positions in `usable`, 1 would be the control's and nothing measured.
    assert set(offsets(made, usable=[1, 3], changed={1})) == {1}

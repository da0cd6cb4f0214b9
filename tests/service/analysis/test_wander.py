"""Run-to-run wander in the verdicts, on plain arrays: the process as the unit of the test, the
floor a series' own wander sets (also on a level of one run), the pending verdict and the next
run that settles it, and the run-wide false-discovery control."""

from __future__ import annotations

import numpy as np
import pytest

from service.analysis import verdicts, wander
from service.analysis.candidate import Candidate
from service.analysis.decision import decide
from service.analysis.verdicts import Comparison, compare_many


def run(level: float, rng: np.random.Generator, processes: int = 3, samples: int = 20,
        process_sd: float = 0.0, sample_sd: float = 0.002, run_sd: float = 0.0
        ) -> tuple[np.ndarray, list[int]]:  # fmt: skip
    """One run's samples (processes back to back) and its samples per process."""
    whole = level * (1 + run_sd * rng.standard_normal())
    parts = [
        whole
        * (1 + process_sd * rng.standard_normal())
        * (1 + sample_sd * rng.standard_normal(samples))
        for _ in range(processes)
    ]
    return np.concatenate(parts), [samples] * processes


def candidate(head: tuple, base: list[tuple], history: list[float] | None = None,
              later: float | None = None) -> Candidate:  # fmt: skip
    medians = [float(np.median(b[0])) for b in base]
    return Candidate(
        0, head[0], [b[0] for b in base], baseline_medians=medians, noise_medians=medians,
        head_counts=head[1], baseline_counts=[b[1] for b in base], next_median=later,
        history=history if history is not None else medians,
    )  # fmt: skip


def test_processes_not_samples_are_the_unit_where_processes_differ() -> None:
    """A 4.2 ms kernel whose processes sit 2% apart while each one's samples sit within 0.2%
    (the H200's spilling SGEMM): an innocent run 2.5% off its level is within that wander.
    Pooled as if independent, its samples would call it a change with p far below 1e-10."""
    rng = np.random.default_rng(5)
    base = [run(4200.0, rng, process_sd=0.02) for _ in range(6)]
    heads = [run(4200.0, rng, process_sd=0.02) for _ in range(40)]
    results = [compare_many([candidate(h, base)])[0] for h in heads]
    assert all(r is not None and r.unit == "process" for r in results)
    wide = [r for r in results if r is not None and abs(r.change) > 0.01]
    assert wide, "some innocent runs must sit more than the class floor (1%) off"
    assert all(r.floor > abs(r.change) or r.p_value > 0.01 for r in wide)
    worst = max(range(40), key=lambda i: abs(results[i].change))  # type: ignore[union-attr]
    pooled = np.concatenate([b[0] for b in base])
    (by_samples,) = verdicts.rank_test_p_values([(heads[worst][0], pooled)])
    assert by_samples < 1e-4 < results[worst].p_value  # type: ignore[union-attr]
    assert [d.verdict for d in decide([r for r in results if r is not None])] == ["unchanged"] * 40


def test_a_real_change_of_a_wandering_kernel_is_still_caught() -> None:
    rng = np.random.default_rng(6)
    base = [run(4200.0, rng, process_sd=0.02) for _ in range(6)]
    result = compare_many([candidate(run(4200.0 * 1.2, rng, process_sd=0.02), base)])[0]
    assert result is not None and result.change == pytest.approx(0.2, abs=0.04)
    assert result.p_value < 1e-4 and result.change > result.floor > 0.02
    assert decide([result])[0].verdict == "regressed"


def test_a_level_of_one_run_is_never_red_and_the_next_run_settles_it() -> None:
    """Right after a shift the level has one run: what its processes imply sets the floor, a
    change beyond everything known is pending, and the next run along the line decides."""
    rng = np.random.default_rng(7)
    shifted = run(5000.0, rng, process_sd=0.001)
    head = run(5000.0 * 1.05, rng, process_sd=0.001)
    pending = compare_many([candidate(head, [shifted])])[0]
    assert pending is not None and pending.young and pending.next_change is None
    assert decide([pending])[0].verdict == "pending"
    stays = compare_many([candidate(head, [shifted], later=5000.0 * 1.051)])[0]
    assert stays is not None
    decision = decide([stays])[0]
    assert (decision.verdict, decision.settled) == ("regressed", "stayed")
    back = compare_many([candidate(head, [shifted], later=5000.0 * 1.002)])[0]
    assert back is not None
    decision = decide([back])[0]
    assert (decision.verdict, decision.settled) == ("unchanged", "back")
    onwards = compare_many([candidate(head, [shifted], later=5000.0 * 1.3)])[0]
    assert onwards is not None  # further on: it did not come back
    assert (decide([onwards])[0].verdict, decide([onwards])[0].settled) == ("regressed", "stayed")
    other_way = compare_many([candidate(head, [shifted], later=5000.0 * 0.9)])[0]
    assert other_way is not None
    decision = decide([other_way])[0]
    assert (decision.verdict, decision.settled) == ("unchanged", "moved")


def test_a_young_levels_floor_is_what_its_processes_imply() -> None:
    """The spilled kernel's first runs: processes 2% apart make a floor of several percent,
    where the class floor alone (1%) would have called +2.5% a change."""
    rng = np.random.default_rng(8)
    shifted = run(5000.0, rng, process_sd=0.02)
    result = compare_many([candidate(run(5000.0 * 1.025, rng, process_sd=0.02), [shifted])])[0]
    assert result is not None and result.young
    assert result.floor > 0.025
    assert decide([result])[0].verdict == "unchanged"


def test_the_series_history_says_how_far_its_runs_wander() -> None:
    """Whole runs that sit apart (all processes together) are seen from the series' history,
    its run medians from one to the next, which a shift barely moves."""
    rng = np.random.default_rng(9)
    medians = [100.0 * (1 + 0.01 * rng.standard_normal()) for _ in range(60)]
    stepped = medians[:30] + [m * 1.3 for m in medians[30:]]  # nearest first: a shift inside
    spread = wander.successive_spread(np.log(np.asarray(stepped[::-1])))
    assert spread == pytest.approx(0.01, rel=0.3)
    head, base = np.log([100.0, 100.1, 99.9]), [np.log([100.0, 100.1, 99.9])]
    level = wander.measure(head, base, [100.0], history=stepped)
    assert level.young and level.run_spread == pytest.approx(spread)
    assert level.run_df == 58
    fresh = wander.measure(head, base, [100.0])  # a new series: only its processes to go by
    assert fresh.run_df == 0 and fresh.run_spread < 0.001


def test_runs_of_one_process_fall_back_to_the_samples_only_while_nothing_else_knows() -> None:
    rng = np.random.default_rng(10)
    one = [run(100.0, rng, processes=1) for _ in range(4)]
    mature = compare_many([candidate(run(103.0, rng, processes=1), one)])[0]
    assert mature is not None and mature.unit == "process"  # the level's runs know the noise
    young = compare_many([candidate(run(103.0, rng, processes=1), one[:1], history=[])])[0]
    assert young is not None and young.unit == "sample"


def comparison(key: int, p_value: float, change: float = 0.05) -> Comparison:
    return Comparison(key, change, 0.01, p_value, 105.0, 100.0, 8)


def test_benjamini_hochberg_holds_a_lone_p_value_of_a_large_run_to_its_rank() -> None:
    """One series at p = 0.004 among 99 that did not move: alone it would pass q = 0.01; among
    a hundred comparisons its q is 0.4."""
    rng = np.random.default_rng(11)
    quiet = [comparison(k, float(p), 0.0) for k, p in enumerate(rng.uniform(0.2, 1.0, 99), 1)]
    decided = decide([comparison(0, 0.004), *quiet])
    assert decided[0].q_value == pytest.approx(0.4)
    assert decided[0].verdict == "unchanged"
    assert decide([comparison(0, 0.004)])[0].verdict == "regressed"


def test_q_is_one_percent() -> None:
    """A change at q = 0.03 is no verdict: 1% of the verdicts of a run may be false, not 5%."""
    assert verdicts.Q == 0.01
    decided = decide([comparison(0, 0.03), comparison(1, 0.03)])
    assert [d.verdict for d in decided] == ["unchanged", "unchanged"]
    assert [d.verdict for d in decide([comparison(0, 0.009)])] == ["regressed"]

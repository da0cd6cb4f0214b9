"""The sentences beside a verdict (service.evaluation.verdicts.notes) on plain decisions: a
workload described as a person names it (a cube as n³, other parameters as k=v), a run offset
noted only from half a percent and with the number of kernels that measured it, a young level's
pending change and each way the next run settles it, the host note only on a change, one
control's word that makes a verdict wait, and the parts of a note joined by "; " in their order,
the redefinition first."""

from __future__ import annotations

from dataclasses import replace

from service.analysis.decision import Decision
from service.analysis.verdicts import Comparison
from service.evaluation.verdicts.notes import (
    describe_workload,
    host_note,
    offset_note,
    sole_note,
    verdict_note,
    wander_note,
)

SLOWER = Comparison(key=1, change=0.08, floor=0.01, p_value=1e-6, head_median=108.0,
                    baseline_median=100.0, baseline_results=1)  # fmt: skip


def test_a_cube_is_n_cubed_and_other_parameters_are_sorted_k_equals_v() -> None:
    assert describe_workload("gemm_fwd", {"m": 1024, "n": 1024, "k": 1024, "act": "gelu"}) == (
        "gemm_fwd 1024³ gelu"
    )
    assert describe_workload("gemm_fwd", {"k": 64, "m": 1024, "n": 512}) == "gemm_fwd 1024×512×64"
    assert describe_workload("reduce", {"blocks": 132, "axis": 0}) == "reduce axis=0 blocks=132"
    assert describe_workload("copy", {}) == "copy"


def test_a_run_offset_is_noted_from_half_a_percent_with_its_kernels_counted() -> None:
    assert offset_note(replace(SLOWER, offset=-0.02, controls=0)) == ""  # nothing taken out
    assert offset_note(replace(SLOWER, offset=-0.0049, controls=3)) == ""
    assert offset_note(replace(SLOWER, offset=-0.005, controls=1)) == (
        "net of this run's offset of -0.5%, at which 1 unchanged kernel of the same duration "
        "class and timing method sat off their levels"
    )
    assert "at which 3 unchanged kernels of" in offset_note(
        replace(SLOWER, offset=0.04, controls=3)
    )


def test_a_young_levels_change_is_pending_until_the_next_run_settles_it() -> None:
    young = replace(SLOWER, young=True)
    assert wander_note(Decision(young, 1e-5, "pending"), 1) == (
        "pending: +8.0% clears the floor (1.0%), but the level it is compared with has 1 run, too "
        "few to know how far its runs wander: the next run of this line settles it"
    )
    stayed = Decision(replace(young, next_change=0.07), 1e-5, "regressed", settled="stayed")
    assert wander_note(stayed, 2) == "the next run did not come back (+7.0%): a change of level"
    back = Decision(replace(young, next_change=0.002), 1e-5, "unchanged", settled="back")
    assert wander_note(back, 2) == (
        "+8.0% was not a change: the next run came back (+0.2% against the same 2 runs), so it "
        "was this series' run-to-run wander"
    )
    moved = Decision(replace(young, next_change=-0.05), 1e-5, "unchanged", settled="moved")
    assert wander_note(moved, 2).startswith("+8.0% is not confirmed: the next run went the other")
    # A level old enough to know its wander needs no word.
    assert wander_note(Decision(SLOWER, 1e-5, "regressed"), 8) == ""


def test_the_host_note_comes_only_with_a_change() -> None:
    assert host_note(Decision(SLOWER, 0.5, "unchanged")) == ""
    assert host_note(Decision(SLOWER, 1e-5, "new")) == ""
    assert "the time went to the host code around them" in host_note(
        Decision(SLOWER, 1e-5, "regressed")
    )


def test_a_verdict_one_control_would_flip_waits_and_says_why() -> None:
    net = replace(SLOWER, change=0.002, offset=0.078, controls=1)
    waits = Decision(SLOWER, 1e-5, "pending", sole="waits", other=net)
    said = sole_note(waits, "reduce reduce_kernel")
    assert said.startswith(
        "pending: +8.0% as measured, +0.2% net of this run's offset, where one unchanged kernel "
        "alone (reduce reduce_kernel) sat +7.8% off"
    )
    assert sole_note(Decision(SLOWER, 1e-5, "regressed"), "x") == ""
    # The wander note's own "pending:" would say the same twice: it is left out.
    young = Decision(replace(SLOWER, young=True), 1e-5, "pending", sole="waits", other=net)
    assert verdict_note(young, 1, sole_control="reduce reduce_kernel") == said


def test_a_notes_parts_are_joined_in_order_the_redefinition_first() -> None:
    decision = Decision(replace(SLOWER, offset=0.02, controls=2, young=True), 1e-5, "pending")
    note = verdict_note(decision, 1, redefined="reduce blocks=1056 → reduce blocks=132",
                        old_series=7, same_kernels=True)  # fmt: skip
    parts = note.split("; ")
    assert parts[0] == (
        "redefined in place: reduce blocks=1056 → reduce blocks=132, compared with the level of "
        "its series before (series 7)"
    )
    assert parts[1].startswith("its kernels are the same as in its baseline")
    assert parts[2].startswith("net of this run's offset of +2.0%")
    assert parts[3].startswith("pending: +8.0% clears the floor")
    assert len(parts) == 4
    assert verdict_note(Decision(SLOWER, 0.5, "unchanged"), 8) == ""

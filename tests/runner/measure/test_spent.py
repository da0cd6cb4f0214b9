"""runner.measure.spent: where a timing process's seconds went, from what its workloads said,
and the rest of the process's wall time."""

from __future__ import annotations

from runner.measure.phase import Outcome
from runner.measure.spent import note, spent


def said(**seconds: float) -> Outcome:
    return Outcome("ok", result={"samples": [1.0], "seconds": seconds})


def test_the_parts_are_summed_over_the_workloads_and_the_rest_is_the_process() -> None:
    outcomes = {
        "block[n=1]": said(prepare=1.6, placements=1.5, warm_up=0.3, samples=0.2),
        "copy[n=1]": said(prepare=0.5, placements=0.0, warm_up=0.3, samples=0.1),
        "crashed[n=1]": Outcome("crashed", error="boom"),
    }
    assert spent(outcomes)["copy[n=1]"] == {"prepare": 0.5, "placements": 0.0, "warm_up": 0.3,
                                           "samples": 0.1}  # fmt: skip
    assert note(outcomes, 8.5) == (
        "8.5 s: prepare 2.1 s, other placements 1.5 s, warm-up 0.6 s, samples 0.3 s, the rest "
        "4.0 s (starting, CUDA, closing); most in block[n=1] 3.6 s"
    )


def test_nothing_said_or_a_quick_process_is_no_note_and_a_tiny_part_is_left_out() -> None:
    assert note({"a[n=1]": Outcome("ok", result={"samples": [1.0]})}, 3.0) == ""
    quick = {"a[n=1]": said(prepare=0.01, placements=0.0, warm_up=0.2, samples=0.5)}
    assert note(quick, 0.9) == ""  # a CPU suite's: not worth a line
    assert note(quick, 1.2).startswith("1.2 s: warm-up 0.2 s, samples 0.5 s, the rest 0.5 s")
    idle = {"a[n=1]": said(prepare=0.0, placements=0.0, warm_up=0.0, samples=0.0)}
    assert note(idle, 2.0).startswith("2.0 s: the rest 2.0 s (starting")


def test_the_rest_says_how_long_the_process_took_to_its_first_workload_and_after_its_last() -> None:
    from runner.measure.phase import Phase

    outcomes = {"block[n=1]": said(prepare=1.6, placements=1.5, warm_up=0.3, samples=0.2)}
    phase = Phase("time", starting=0.43, closing=1.88)
    assert note(outcomes, 6.0, phase) == (
        "6.0 s: prepare 1.6 s, other placements 1.5 s, warm-up 0.3 s, samples 0.2 s, the rest "
        "2.4 s (0.4 s to its first workload, 1.9 s from its last to its end); most in block[n=1] "
        "3.6 s"
    )
    # Where the worker said when its exit handlers ended: theirs, and the process's own end.
    phase = Phase("time", starting=0.43, closing=1.88, exit_handlers=0.12, ended=1.7)
    assert "1.9 s from its last to its end: 0.1 s in its exit handlers, 1.7 s after them)" in (
        note(outcomes, 6.0, phase)
    )

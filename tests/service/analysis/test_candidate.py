"""The Candidate a run's series is compared as (service.analysis.candidate): what its defaults
mean to the verdicts that read it (one process per run, no stored medians, no next run, no known
runs, no control, a level settled after wander.MIN_LEVEL results) and that it cannot change once
made."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from service.analysis import wander
from service.analysis.candidate import Candidate


def bare() -> Candidate:
    return Candidate(7, np.array([10.0, 10.2, 9.9]), [np.array([10.0, 10.1, 10.0])])


def test_a_bare_candidate_is_a_duration_with_nothing_known_beside_its_samples() -> None:
    c = bare()
    # Lower is better: a duration, the metric the runner mostly measures.
    assert c.lower_is_better is True
    # Nothing stored: the verdicts compute the baseline's medians, and no segment is wider than
    # the baseline itself.
    assert c.baseline_medians is None and c.noise_medians is None
    # No next run along the line (a young level's change waits for one) and no history.
    assert c.next_median is None and tuple(c.history) == ()
    # Runs unknown: a control's change cannot be read against the same runs as another's.
    assert tuple(c.history_runs) == () and tuple(c.baseline_runs) == ()
    # Not a control unless the caller says so: nothing corrects another series by default.
    assert c.control is False and c.group == ""


def test_a_level_settles_after_min_level_results_unless_the_caller_says_otherwise() -> None:
    # A series' first level keeps MIN_LEVEL; MIN_LEVEL_AFTER_SHIFT is the caller's to ask for.
    assert bare().settled_at == wander.MIN_LEVEL
    assert wander.MIN_LEVEL < wander.MIN_LEVEL_AFTER_SHIFT
    after_shift = dataclasses.replace(bare(), settled_at=wander.MIN_LEVEL_AFTER_SHIFT)
    assert after_shift.settled_at == 3


def test_empty_counts_make_each_run_one_process() -> None:
    c = Candidate(1, np.array([1.0, 2.0, 3.0, 4.0]), [np.array([2.0, 2.0])])
    assert tuple(c.head_counts) == () and c.baseline_counts == []
    # One process: one median over all four samples, (2 + 3) / 2.
    (head,) = wander.log_process_medians(c.head, c.head_counts)
    assert head == pytest.approx(np.log(2.5))
    # Counts given: two processes of two samples each, medians 1.5 and 3.5.
    split = dataclasses.replace(c, head_counts=(2, 2))
    assert np.exp(wander.log_process_medians(split.head, split.head_counts)) == pytest.approx(
        [1.5, 3.5]
    )


def test_candidates_do_not_share_their_baseline_counts() -> None:
    # A mutable default shared between instances would let one series' counts leak into
    # another's.
    a, b = bare(), bare()
    assert a.baseline_counts is not b.baseline_counts


def test_a_candidate_cannot_be_changed_once_made() -> None:
    c = bare()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.control = True  # type: ignore[misc]

"""One series at a run's head, as the verdicts compare it (service.analysis.verdicts): its
samples, its baseline's, and what the run's other series need to know of it."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from service.analysis import wander


@dataclass(frozen=True)
class Candidate:
    """One series to compare: the head's samples and its baseline runs' samples, each with the
    number of samples of each of its processes (stored back to back)."""

    key: int
    head: np.ndarray
    baseline: list[np.ndarray]
    lower_is_better: bool = True
    baseline_medians: list[float] | None = None  # stored already: saves recomputing them
    # The medians whose spread sets the noise floor (the baseline's whole segment); without
    # them, the baseline runs' own medians.
    noise_medians: list[float] | None = None
    head_counts: Sequence[int] = ()  # samples per process; empty: one process
    baseline_counts: list[Sequence[int]] = field(default_factory=list)
    next_median: float | None = None  # the next run's median along the line, if there is one
    # The series' run medians before the head, nearest first: its level's and earlier levels'
    # (how far its runs wander, service.analysis.wander).
    history: Sequence[float] = ()
    # The run each of `history` is of (set beside the same runs of the run's other series: how
    # far a control wanders apart from its run, service.analysis.run_offset); empty: unknown.
    history_runs: Sequence[Hashable] = ()
    # The run of each of `baseline` (empty: unknown): a control's change, read against the same
    # runs, measures the head run's offset from them (service.analysis.run_offset).
    baseline_runs: Sequence[Hashable] = ()
    # Nothing that determines this series' kernels changed since its baseline: it measures
    # its run's common offset for the others of its group (the timing method, say).
    control: bool = False
    group: Hashable = ""
    # The results the level needs before its wander counts as measured (wander.min_level).
    settled_at: int = wander.MIN_LEVEL

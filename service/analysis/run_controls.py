"""Each series' run offset as the run's controls measure it (service.analysis.run_offset), for
the verdicts: which series are controls (marked so by the caller, on a level old enough to know
its wander and tested on processes), how far each wanders on its own, and each control's change
read against the runs the series it corrects is compared with."""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable
from dataclasses import replace

import numpy as np

from service.analysis import run_offset, wander
from service.analysis.candidate import Candidate

# A usable series' head and baseline log process medians, its baseline medians and its wander.
Unit = tuple[np.ndarray, list[np.ndarray], list[float], wander.Wander]


def history_logs(c: Candidate) -> dict[Hashable, float]:
    """A series' earlier run medians by run (log), where it knows their runs."""
    if len(c.history_runs) != len(c.history):
        return {}
    return {r: math.log(m) for r, m in zip(c.history_runs, c.history, strict=True) if m > 0}


def run_offsets(
    candidates: list[Candidate],
    usable: list[int],
    units: dict[int, Unit],
    tests: dict[int, wander.LevelTest | None],
    groups: list[Hashable],
    own: dict[int, float | None],
    logs: list[dict[Hashable, float]],
    changed: Collection[int] = (),
) -> dict[int, run_offset.Offset]:
    """Each usable series' run offset, where controls of its group measure one (evident or not):
    a control is a series the caller marked so, on a level old enough to know its wander and
    tested on processes; `groups` (per usable series): its timing method (the caller's `group`)
    and duration class; `own`: how far each wanders apart from its group's runs (None:
    unknown); `logs`: each one's earlier run medians by run (`history_logs`); `changed`: those
    whose own reading, without controls, is beyond their floor (such a control, left alone,
    is a change of its own: run_offset.shared_controls). The controls' changes are read against each
    series' baseline runs (series that share them, mostly all of a run's, are measured at
    once)."""
    process_vars, controls, alone = [], [], []
    for i in usable:
        head, base, _, level = units[i]
        runs = len(base)
        # What a control knows its change to beside the run's offset: its processes' noise
        # (the share between runs is what the controls share, the offset itself).
        process_vars.append(
            level.process_var * (1 / head.size + 1 / (runs * level.processes))
            if runs and head.size and level.processes
            else math.inf
        )
        controls.append(candidates[i].control and tests[i] is not None and not level.young)
        # How far it wanders on its own: apart from its group's runs where they were measured
        # beside it, else all of its runs' wander (the offsets of its runs among it).
        alone.append(level.run_var if own[i] is None else min(level.run_var, own[i]))
    views: dict[tuple[Hashable, ...], list[int]] = {}
    for k, i in enumerate(usable):
        views.setdefault(tuple(candidates[i].baseline_runs), []).append(k)
    own_change = [i in changed for i in usable]
    out: dict[int, run_offset.Offset] = {}
    for runs_of, targets in views.items():
        changes, run_vars = [], []
        for k, i in enumerate(usable):
            change, runs = (
                control_change(candidates[i], units[i], logs[k], runs_of)
                if controls[k]
                else (math.nan, 0)
            )
            changes.append(change)
            run_vars.append(alone[k] * (1 + 1 / runs) if runs else math.inf)
        found = run_offset.offsets(
            changes, run_vars, process_vars, groups, controls, targets, own_change
        )
        for k, o in zip(targets, found, strict=True):
            if o is not None:
                out[usable[k]] = replace(o, sole=None if o.sole is None else usable[o.sole])
    return out


def control_change(
    c: Candidate,
    unit: Unit,
    logs: dict[Hashable, float],
    runs_of: tuple[Hashable, ...],
) -> tuple[float, int]:
    """A series' log change (its head's median) against the median of its run medians in the
    runs `runs_of`, where they are among its own baseline's (the same level of its code: a
    level shift of its own between them would read as an offset); else against its own
    baseline. With the number of runs it was read against."""
    now = float(np.median(c.head))
    if now <= 0:
        return math.nan, 0
    seen = [logs[r] for r in runs_of if r in logs]
    if runs_of and len(seen) == len(runs_of) and set(runs_of) < set(c.baseline_runs):
        return math.log(now) - float(np.median(seen)), len(seen)
    base = float(np.median(unit[2]))
    return (math.log(now / base) if base > 0 else math.nan), len(unit[1])

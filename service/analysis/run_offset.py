"""A run's common offset: how far every unchanged kernel of a duration class sat off its level
in one run, measured on the kernels whose code did not change, and taken out of the others'
changes.

Runs of the same binaries do not all sit where their levels do: on an H200 the four short
streaming kernels of one history run (3.5 us, six processes each) sat 2-6% off their levels
together, in every process (benchmarks/history_gpu.py; long and mid kernels of the same run did
not move). A kernel a commit changed carries its run's offset in its change: at the H200
history's second step three short kernels were reported 3.0-3.3 points under the interleaved
truth, while the one short kernel the commit left alone read -2.3% against a truth of +0.9%.

A run knows its offset where it holds kernels that are *controls*: the caller says which (their
captures show that nothing that determines them changed since their baseline: compiled code,
launch, inputs, host and tools; service.evaluation.verdicts.controls). A series' offset is the
median change of the other controls of its group (duration class and timing method: what moves short
kernels need not move long ones, nor a timer that counts launch gaps one that does not),
leave-one-out so that a control is not corrected by itself. Its variance, what the corrected
change's test must add to the series' own: a control's change is known to its test's standard
error, and a median of k of them to about pi/2 x their variance / k (k >= 3).

How far a control wanders on its own is not how far its runs wander: most of a short kernel's
run-to-run wander is its run's offset, the very thing it is to measure (on the H200 the four short
kernels of a history moved 1-2% together from run to run, 0.3% apart). Where the series of a
group were measured in the same earlier runs, a control's own wander is measured apart from its
run's: the spread of its run medians less the median of the group's others in each of those runs
(`apart_vars`). One control whose runs keep within 0.3% of the others' is then evidence that its
run sat 2% off; one that wanders apart from them (a spilling kernel) is still none.

A control's change is read against the very runs the series it corrects is compared with (its
baseline's runs, where the control was measured in them), not against its own level: a young
level's runs carry their own offsets, and on an H100 the short kernels of a history's first two
runs after a fix sat 1.5-2.5% slow together, so that the one short control of the next run,
6% fast against its long level, was 8% fast against those two runs, and three kernels the commit
changed by 16-31% read 2-4 points under the interleaved truth while it was corrected by the 6%.

Nothing is corrected where no control says so: a commit that changes code every kernel shares
(a common header, the suite's Python) leaves no control, so a slowdown of every kernel is never
mistaken for a run that sat off.

Equal determinants do not make a series steady: a change to the Python around a workload's
kernels (a synchronize, host work between them) moves its time while its kernels' code, launch
and inputs stay the same. Taken for its run's offset, such a series' own step of 6% turned the
series beside it (0.2% noise) red by 6% the other way, and a step of 1.5x by 33-50%. So a control
whose reading is itself a change is no control of others (`shared_controls`): its reading apart
from the others' median is beyond what its own wander apart from them explains, or, left alone,
beyond its own floor. An offset is shown shared by the run where two controls or more that agree
measure it; one control's word (`Offset.sole`) flips no verdict by itself: the verdict waits for
the run that follows, where a change that stays is a change of the series, and one that does not
was the control's own move or its run's (service.analysis.verdicts).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from service.analysis.wander import step_spread

MIN_CONTROLS = 1  # controls of a group before its offset is taken out
# How many of its standard errors an offset must be from zero before it is taken out: a control
# wanders on its own too (a spilling kernel's runs by 2-5%), and one control's wander is no
# evidence that its whole run sat off.
EVIDENT = 2.0
MIN_SHARED = 4  # earlier runs a control shares with its group before its own wander is known
# A step between two runs of a series apart from its group's of more than JUMP standard
# deviations of such a step is a level shift (its own or the others'), not its wander.
JUMP = 4.0
# A control whose reading sits this many of its standard deviations (its wander apart from its
# group's runs, and the doubt of the others' median) from the other controls' is a change of
# its own, not the run's offset (`shared_controls`).
OWN_CHANGE = 3.0


@dataclass(frozen=True)
class Offset:
    log: float  # the run's offset: the log of the ratio its controls sat at
    var: float  # what the controls' processes leave unknown of it (variance of the log)
    controls: int  # how many controls measured it
    # What the controls' own wander leaves unknown of it (variance of the log): how far from
    # zero an offset must be before it is taken out (EVIDENT of its standard errors).
    spread: float = 0.0
    # Where one control alone measured it: that control (its position among the series); its
    # word flips no verdict by itself (service.analysis.verdicts).
    sole: int | None = None

    @property
    def evident(self) -> bool:
        """Far enough from zero that the controls' own wander does not explain it."""
        return abs(self.log) > EVIDENT * math.sqrt(self.spread)

    @property
    def relative(self) -> float:
        return math.expm1(self.log)


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The value at half the total weight (the mean of the two around it on a tie)."""
    order = np.argsort(values)
    v, w = np.asarray(values, dtype=float)[order], np.asarray(weights, dtype=float)[order]
    cumulative = np.cumsum(w) / w.sum()
    i = int(np.searchsorted(cumulative, 0.5))
    if math.isclose(cumulative[i], 0.5) and i + 1 < v.size:
        return float((v[i] + v[i + 1]) / 2)
    return float(v[i])


def offsets(
    changes: Sequence[float],
    run_vars: Sequence[float],
    process_vars: Sequence[float],
    groups: Sequence[Hashable],
    controls: Sequence[bool],
    targets: Sequence[int] | None = None,
    changed: Sequence[bool] | None = None,
) -> list[Offset | None]:
    """Per series (of `targets`, default all), its group's offset as the other controls of the
    group measure it (None where fewer than MIN_CONTROLS do; not `evident` where what they
    measure is within EVIDENT standard errors of zero: nothing is to be taken out then).
    `changes`: each series' log change against the runs the targets are compared with;
    `run_vars`: each change's variance from run to run (the controls' weights: a control that
    wanders on its own counts for little); `process_vars`: its variance from its processes alone
    (the part no other kernel shares: what the test of a corrected change must add);
    `changed`: whether each series' own reading, against its own baseline and without
    controls, is beyond its floor (a control left alone is then a change of its own:
    `shared_controls`; default: none is)."""
    own = changed if changed is not None else [False] * len(changes)
    kept = shared_controls(changes, run_vars, own, groups, controls)
    members: dict[Hashable, list[int]] = {}
    for i, group in enumerate(groups):
        if kept[i]:
            members.setdefault(group, []).append(i)
    out: list[Offset | None] = []
    for i in range(len(groups)) if targets is None else targets:
        others = [j for j in members.get(groups[i], []) if j != i]
        if len(others) < MIN_CONTROLS:
            out.append(None)
            continue
        weights = [1 / run_vars[j] for j in others]
        log = weighted_median([changes[j] for j in others], weights)
        spread = median_factor(len(others)) / sum(weights)
        known = (
            median_factor(len(others))
            * sum(w * w * process_vars[j] for w, j in zip(weights, others, strict=True))
            / sum(weights) ** 2
        )
        sole = others[0] if len(others) == 1 else None
        out.append(Offset(log, known, len(others), spread, sole))
    return out


def shared_controls(
    changes: Sequence[float],
    run_vars: Sequence[float],
    changed: Sequence[bool],
    groups: Sequence[Hashable],
    controls: Sequence[bool],
) -> list[bool]:
    """Which series measure their run's offset: the controls (with a finite change and a known
    wander) whose reading is not a change of their own. Per group, the control whose reading
    sits furthest from the median of the others', in OWN_CHANGE standard deviations (its run
    variance and the doubt of that median), is left out while one is beyond them, one at a time
    (a step of one of three controls would pull the median of the two it leaves each of the
    others against), one whose own reading is a change first (`changed`: beyond the floor its
    own verdict has without controls); a control left alone is kept unless its own reading is a
    change."""
    kept = [
        bool(control) and math.isfinite(change) and 0 < var < math.inf
        for change, var, control in zip(changes, run_vars, controls, strict=True)
    ]
    by_group: dict[Hashable, list[int]] = {}
    for i, group in enumerate(groups):
        if kept[i]:
            by_group.setdefault(group, []).append(i)
    for members in by_group.values():
        while members:
            values = np.array([changes[i] for i in members])
            if len(members) == 1:
                kept[members[0]] = not changed[members[0]]
                break
            weights = np.array([1 / run_vars[i] for i in members])
            # What the others' median leaves unknown, beside the control's own wander.
            doubt = median_factor(len(members) - 1) / (weights.sum() - weights)
            scales = np.sqrt(1 / weights + doubt)
            apart = np.abs(values - leave_one_out_medians(values)) / scales
            beyond = [k for k in range(len(members)) if apart[k] > OWN_CHANGE]
            if not beyond:
                break
            # A control apart from the others whose own reading is a change goes first (of two
            # that disagree, the one that moved).
            worst = max(beyond, key=lambda k: (changed[members[k]], apart[k]))
            kept[members.pop(worst)] = False
    return kept


def apart_vars(
    histories: Sequence[Mapping[Hashable, float]], groups: Sequence[Hashable]
) -> list[float | None]:
    """Per series, the variance of its run's log median apart from its group's: over the
    earlier runs it shares with others of its group (`histories`: run -> log median, in the
    series' order, nearest first), the robust spread of its log median less the median of the
    others' in each run, level shifts left out (`shift_free_spread`); None with fewer than
    MIN_SHARED such runs."""
    by_group: dict[Hashable, list[int]] = {}
    for i, group in enumerate(groups):
        by_group.setdefault(group, []).append(i)
    apart: list[dict[Hashable, float]] = [{} for _ in histories]
    for members in by_group.values():
        by_run: dict[Hashable, list[int]] = {}
        for i in members:
            for run in histories[i]:
                by_run.setdefault(run, []).append(i)
        for run, present in by_run.items():
            if len(present) < 2:
                continue
            values = np.array([histories[i][run] for i in present])
            for i, others in zip(present, leave_one_out_medians(values), strict=True):
                apart[i][run] = histories[i][run] - others
    out: list[float | None] = []
    for i, history in enumerate(histories):
        shared = [apart[i][run] for run in history if run in apart[i]]  # the series' order
        out.append(
            shift_free_spread(np.asarray(shared)) ** 2 if len(shared) >= MIN_SHARED else None
        )
    return out


def shift_free_spread(values: np.ndarray) -> float:
    """wander.successive_spread with the steps of level shifts left out: each series of a
    group shifts at the commits that change its kernels, and apart from the others' median it
    shifts at theirs too (three shifts among ten runs of a short kernel of the H200 history put
    the median step among them: 1.06% for a kernel that keeps within 0.5% of its runs). Steps
    beyond JUMP times the spread of the others are left out, again until none is, never more
    than half of them."""
    steps = np.abs(np.diff(values))
    while steps.size >= 2:
        scale = step_spread(steps) * math.sqrt(2)  # of one step
        kept = steps[steps <= JUMP * scale]
        if scale == 0 or kept.size == steps.size or 2 * kept.size < steps.size:
            break
        steps = kept
    return step_spread(steps)


def leave_one_out_medians(values: np.ndarray) -> np.ndarray:
    """For each value (of two or more), the median of the others."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    k = values.size
    position = np.empty(k, dtype=np.int64)
    position[order] = np.arange(k)  # where each value sits among them
    lower, upper = (k - 2) // 2, (k - 1) // 2  # the middle of the k - 1 others
    at_lower = lower + (lower >= position)  # skip the value itself
    at_upper = upper + (upper >= position)
    return (ranked[at_lower] + ranked[at_upper]) / 2


def median_factor(k: int) -> float:
    """The variance of a median of k estimates over that of their mean (pi/2 for many)."""
    return math.pi / 2 if k >= 3 else 1.0

"""The sentences beside a verdict: what a person needs to read it (a run offset taken out of the
change, a young level's pending change and how the next run settled it, a workload redefined
in place)."""

from __future__ import annotations

from typing import Any

from service.analysis.decision import Decision
from service.analysis.verdicts import Comparison

OFFSET_NOTED = 0.005  # a run offset taken out is noted from half a percent


def verdict_note(
    decision: Decision,
    level_results: int,
    redefined: str = "",
    old_series: int | None = None,
    sole_control: str = "",
    same_kernels: bool = False,
) -> str:
    """The verdict's note, its parts joined by "; " (none holds one: a confirmation's finding
    replaces the part that says why a verdict is pending,
    service.evaluation.verdicts.confirmations): `redefined` describes how a workload redefined in
    place changed (its retired series `old_series`), empty where it was not; `sole_control` names
    the one control that measured the run's offset, where one alone did; `same_kernels`: nothing
    that determines the series' kernels changed since its baseline."""
    parts = [
        f"redefined in place: {redefined}, compared with the level of its series before "
        f"(series {old_series})"
        if redefined
        else "",
        host_note(decision) if same_kernels else "",
        offset_note(decision.comparison),
        sole_note(decision, sole_control),
        wander_note(decision, level_results) if decision.sole != "waits" else "",
    ]
    return "; ".join(part for part in parts if part)


def host_note(decision: Decision) -> str:
    """A change of a series whose kernels did not change says where its time went."""
    if decision.verdict in ("unchanged", "new"):
        return ""
    return (
        "its kernels are the same as in its baseline (compiled code, launch and inputs): the "
        "time went to the host code around them or the environment"
    )


def sole_note(decision: Decision, control: str) -> str:
    """Where one control alone measured the run's offset and the verdict hung on it."""
    if decision.sole is None or decision.other is None:
        return ""
    c, other = decision.comparison, decision.other
    net = c if c.controls else other
    one = f"one unchanged kernel alone ({control or 'a control'}) sat {net.offset:+.1%} off"
    reading = f"{other.change:+.1%} {'net of that offset' if other.controls else 'as measured'}"
    if decision.sole == "waits":
        return (
            f"pending: {c.change:+.1%} as measured, {other.change:+.1%} net of this run's offset, "
            f"where {one}, and one kernel's word does not show that its run sat off (it may have "
            "moved on its own): the next run of this line settles it"
        )
    if decision.sole == "stayed":
        return (
            f"{one} (it would read {reading}); the next run stayed at "
            f"{c.next_raw:+.1%} against the same baseline: a change of this series"
        )
    return (
        f"{one}, which would read it {reading}; the next run read {c.next_raw:+.1%} "
        "against the same baseline: no change of this series"
    )


def offset_note(c: Comparison) -> str:
    """A change taken net of its run's offset says so, where the offset is worth a mention."""
    if not c.controls or abs(c.offset) < OFFSET_NOTED:
        return ""
    kernels = f"{c.controls} unchanged kernel{'s' * (c.controls != 1)}"
    return (
        f"net of this run's offset of {c.offset:+.1%}, at which {kernels} of the same duration "
        "class and timing method sat off their levels"
    )


def wander_note(decision: Decision, level_results: int) -> str:
    """What a person needs to read a verdict on a level too young to know its wander."""
    c = decision.comparison
    runs = f"{level_results} run{'s' * (level_results != 1)}"
    if decision.verdict == "pending":
        return (
            f"pending: {c.change:+.1%} clears the floor ({c.floor:.1%}), but the level it is "
            f"compared with has {runs}, too few to know how far its runs wander: the next run "
            "of this line settles it"
        )
    if decision.settled == "stayed":
        return f"the next run did not come back ({c.next_change:+.1%}): a change of level"
    if decision.settled == "back":
        return (
            f"{c.change:+.1%} was not a change: the next run came back ({c.next_change:+.1%} "
            f"against the same {runs}), so it was this series' run-to-run wander"
        )
    if decision.settled == "moved":
        return (
            f"{c.change:+.1%} is not confirmed: the next run went the other way "
            f"({c.next_change:+.1%} against the same {runs})"
        )
    return ""


def describe_workload(name: str, params: dict[str, Any]) -> str:
    """gemm_fwd 1024³ gelu; other parameters as k=v."""
    rest = dict(params)
    dims = [rest.pop(k) for k in ("m", "n", "k") if k in rest]
    parts = [name]
    if len(dims) == 3 and len(set(dims)) == 1:
        parts.append(f"{dims[0]}³")
    elif dims:
        parts.append("×".join(str(d) for d in dims))
    parts += [str(v) if k == "act" else f"{k}={v}" for k, v in sorted(rest.items())]
    return " ".join(parts)

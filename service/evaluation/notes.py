"""The sentences beside a verdict: what a person needs to read it (a run offset taken out of the
change, a young level's pending change and how the next run settled it, a workload redefined
in place)."""

from __future__ import annotations

from service.analysis.verdicts import Comparison, Decision

OFFSET_NOTED = 0.005  # a run offset taken out is noted from half a percent


def verdict_note(
    decision: Decision, level_results: int, redefined: str = "", old_series: int | None = None
) -> str:
    """The verdict's note: `redefined` describes how a workload redefined in place changed
    (its retired series `old_series`), empty where it was not."""
    parts = [
        f"redefined in place: {redefined}, compared with the level of its series before "
        f"(series {old_series})"
        if redefined
        else "",
        offset_note(decision.comparison),
        wander_note(decision, level_results),
    ]
    return "; ".join(part for part in parts if part)


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
            f"compared with has {runs}, too few to know how far its runs wander; the next run "
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

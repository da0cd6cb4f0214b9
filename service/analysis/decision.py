"""Deciding a run's series from their comparisons (service.analysis.verdicts.compare_many):
Benjamini-Hochberg across the run's series, the effect floor, a young level's pending change
and how the next run settles it, and a verdict that one control's offset alone would flip
(service.analysis.run_offset), which waits for the next run likewise."""

from __future__ import annotations

from dataclasses import dataclass, replace

from scipy.stats import false_discovery_control

from service.analysis.verdicts import Comparison, Q


@dataclass(frozen=True)
class Decision:
    comparison: Comparison
    q_value: float
    verdict: str  # regressed | improved | unchanged | pending
    # How the next run settled a young level's change: "stayed" (a change of level), "back"
    # (it came back: this run was an outlier of the series' wander) or "moved" (it moved on,
    # a change of its own: this one is not confirmed); None where nothing was settled.
    settled: str | None = None
    # Where one control's offset alone would flip the verdict: "waits" (pending until the next
    # run), "stayed" (the next run stayed beyond the floor: the change is the series' own) or
    # "back" (it did not: the reading that calls no change stands); None elsewhere.
    sole: str | None = None
    other: Comparison | None = None  # the reading the verdict is not, where `sole` is set


def decide(comparisons: list[Comparison], q: float = Q) -> list[Decision]:
    """Benjamini-Hochberg over the run's series, then the effect floor; on a young level, the
    next run's settlement (or pending while there is none). Where one control alone measured a
    series' offset and the verdict differs with and without it (one control's word, which may be
    its own move: run_offset.shared_controls), the next run decides, pending until there is
    one: where it stays beyond the changed reading's floor on its side, the change is the
    series' own; where it does not, the reading that calls no change stands."""
    if not comparisons:
        return []
    q_values = false_discovery_control([c.p_value for c in comparisons], method="bh")
    raw = [c.alternative or c for c in comparisons]
    raw_q = false_discovery_control([c.p_value for c in raw], method="bh")
    out = []
    for c, q_value, r, r_q in zip(comparisons, q_values, raw, raw_q, strict=True):
        net = _decide_one(c, float(q_value), q)
        measured = _decide_one(r, float(r_q), q)
        if c.alternative is None or measured.verdict == net.verdict:
            out.append(net)
            continue
        changed, other = (measured, net) if net.verdict == "unchanged" else (net, measured)
        if c.next_raw is None:
            out.append(replace(measured, verdict="pending", sole="waits", other=c))
            continue
        moved = changed.comparison
        stays = c.next_raw * moved.change > 0 and abs(c.next_raw) > moved.floor
        kept, dropped = (changed, other) if stays else (other, changed)
        out.append(replace(kept, sole="stayed" if stays else "back", other=dropped.comparison))
    return out


def _decide_one(c: Comparison, q_value: float, q: float) -> Decision:
    direction = "regressed" if c.change > c.floor else "improved" if c.change < -c.floor else ""
    if q_value > q or not direction:
        return Decision(c, q_value, "unchanged")
    if not c.young:
        return Decision(c, q_value, direction)
    if c.next_change is None:
        return Decision(c, q_value, "pending")
    how = settlement(c)
    return Decision(c, q_value, direction if how == "stayed" else "unchanged", how)


def settlement(c: Comparison) -> str:
    """How the next run settles a young level's change: "stayed" where it did not come back
    (beyond the floor from the baseline on the same side: at the head's level or further on);
    "back" where it is within the floor of the baseline; "moved" where it went beyond the floor
    on the other side."""
    assert c.next_change is not None
    if c.next_change * c.change > 0 and abs(c.next_change) > c.floor:
        return "stayed"
    return "back" if abs(c.next_change) <= c.floor else "moved"

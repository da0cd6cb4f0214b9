"""An alert's attribution in words: the one-line summary a person reads first (which kernel
of the workload got slower and why, in the order service.evaluation.alerts.attribution ranks it)."""

from __future__ import annotations

from typing import Any

from service.analysis import knobs, software
from service.analysis.causes import DURATION
from service.analysis.kernel_set import KernelSetChange
from service.evaluation.verdicts.notes import describe_workload
from service.models import Series

RESOURCE_LABELS = {
    "registers": "registers",
    "spill_stores_bytes": "spill stores (B)",
    "spill_loads_bytes": "spill loads (B)",
    "shared_bytes": "shared memory (B)",
}


def share_text(share: float) -> str:
    return "≈ 100%" if share >= 0.995 else f"≈ {share:.0%}"


def summary(
    series: Series,
    change: float,
    kernels: list[dict[str, Any]],
    causes: list[dict[str, Any]],
    ncu: bool,
    before: Series | None = None,
    upgraded: list[dict[str, Any]] | None = None,
    chose: list[dict[str, Any]] | None = None,
    moved_set: KernelSetChange | None = None,
    turned: list[knobs.KnobChange] | None = None,
) -> str:
    head = describe_workload(series.workload, series.params)
    if before is not None and before.params != series.params:
        head += f" (redefined from {describe_workload(before.workload, before.params)})"
    head = f"{head} {change:+.1%}"
    # Named first: the change the author made (the kernels the launch ran, the compiler's knobs).
    lead = [moved_set.describe()] if moved_set is not None else []
    lead += [knobs.describe(turned)] if turned else []
    if lead:
        head += ": " + "; ".join(lead)
    if not kernels:
        also = beside_kernels(upgraded, chose)
        if lead:
            return head + (f"; {also}" if also else "")
        why = "no kernel's time grew" if ncu else "no ncu data or kernel timeline for this run"
        return f"{head}: {why}" + (f"; {also}" if also else "")
    parts = []
    for k in kernels[:2]:
        part = f"kernel {k['kernel']} {k['change']:+.0%}"
        if len(kernels) > 1:
            part += f" ({share_text(k['share'])} of the slowdown)"
        mine = [c for c in causes if c["kernel"] == k["kernel"]][:2]
        if mine:
            part += ": " + ", ".join(
                f"{c['label']} ({share_text(c['workload_share'])} of the slowdown)" for c in mine
            )
        elif k.get("legacy"):
            moved = [
                f"{m['label']} {m['base']:.3g}→{m['head']:.3g}"
                for m in k["metrics"]
                if m["metric"] != DURATION and (m["change"] is None or abs(m["change"]) >= 0.05)
            ][:2]
            part += ": not ranked (its ncu capture lacks the counters that estimate time)"
            part += f"; moved most: {', '.join(moved)}" if moved else ""
        elif k["ncu"]:
            part += ": unexplained by its counters"
        for r in k["resources"]:
            part += f"; {RESOURCE_LABELS[r['resource']]} {r['base']}→{r['head']}"
        for f in k.get("findings_appeared", [])[:1]:
            speedup = f["estimated_speedup"]
            part += f"; new finding {f['rule']}" + (f" (est. {speedup:.0f}%)" if speedup else "")
        parts.append(part)
    also = beside_kernels(upgraded, chose)
    return f"{head}{'; ' if lead else ': '}" + "; ".join([*parts, also] if also else parts)


def beside_kernels(
    upgraded: list[dict[str, Any]] | None, chose: list[dict[str, Any]] | None
) -> str:
    """Beside the kernels: what the runs ran with, and what the workload chose, that differs."""
    said = [software.describe(u) for u in upgraded or []]
    said += [f"{c['name']} chose {c['head'] or 'nothing'} (was {c['base'] or 'nothing'})"
             for c in chose or []]  # fmt: skip
    return ", ".join(said)

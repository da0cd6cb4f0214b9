"""Why a workload got slower: which kernel's time grew, and the causes that explain it.

Per kernel, never merged: each kernel of the head run's workload is paired with the same
kernel of the base run (its ncu capture, its timeline entry, its ptxas resources). The kernels
whose time grew are named first, each with its share of the workload's slowdown (from the
kernel timeline where both runs have one, else from ncu's durations); then, per kernel, the
causes service.analysis.causes ranks by the share of that kernel's slowdown each explains.
New ncu findings and ptxas changes come after. The one-line summary reads like
"gemm_fwd 1024³ +19%: kernel gemm_fwd_splitk_partial +21%: DRAM bytes read 134 MB → 201 MB
(≈ 85% of the slowdown)".
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis import host_time, kernel_names, knobs, software
from service.analysis.causes import DRAM, DURATION, L1_SECTORS, candidates, rank
from service.analysis.kernel_set import kernel_set_change
from service.analysis.work import determinants
from service.evaluation.alerts.attribution_text import beside_kernels, summary
from service.evaluation.verdicts.notes import describe_workload
from service.models import (
    BuildResource,
    NcuKernel,
    Result,
    Run,
    RunWorkload,
    Series,
    TimelineEntry,
)

RESOURCES = ("registers", "spill_stores_bytes", "spill_loads_bytes", "shared_bytes")
MIN_KERNEL_SHARE = 0.10  # kernels that account for less of the slowdown are not named
MAX_KERNELS = 3
MOVED_METRICS = 12  # per kernel: the counters that moved most, for a person to look at


class _Side:
    """One run's view of the workload: per kernel, ncu counters, findings, time, resources."""

    def __init__(self, session: Session, run: Run | None, series: Series) -> None:
        self.counters: dict[str, dict[str, float]] = {}
        self.labels: dict[str, dict[str, str]] = {}  # the runner's, sent with each capture
        self.findings: dict[str, dict[str, float | None]] = {}
        self.timeline: dict[str, float] = {}
        self.resources: dict[str, dict[str, int]] = {}
        self.kernels: list[str] = []
        self.choices: dict[str, str] = {}  # what the workload chose in `prepare`
        self.compiled: dict[str, dict[str, Any]] = {}  # per kernel, as its compiler left it
        self.determinants: dict[str, str | None] = {}  # what determined each captured kernel
        self.median: float | None = None  # the workload's measured time
        rw = None
        if run is not None:
            rw = session.scalars(
                select(RunWorkload).where(
                    RunWorkload.run_id == run.id,
                    RunWorkload.name == series.workload,
                    RunWorkload.params_key == series.params_key,
                )
            ).first()
        if rw is None:
            return
        self.kernels = list(rw.kernels)
        self.choices = {str(k): str(v) for k, v in (rw.choices or {}).items()}
        self.compiled = knobs.by_kernel(rw.compiled or [])
        self.median = session.scalar(
            select(Result.median).where(Result.run_id == rw.run_id, Result.series_id == series.id)
        )
        for c in session.scalars(select(NcuKernel).where(NcuKernel.run_workload_id == rw.id)):
            self.determinants[c.kernel] = determinants(c.determinants, c.metrics)
            self.counters[c.kernel] = {n: float(v["value"]) for n, v in c.metrics.items()}
            self.labels[c.kernel] = {n: v["label"] for n, v in c.metrics.items() if "label" in v}
            self.findings[c.kernel] = {f["rule"]: f["estimated_speedup"] for f in c.findings}
        for t in session.scalars(
            select(TimelineEntry).where(TimelineEntry.run_workload_id == rw.id)
        ):
            self.timeline[t.kernel] = t.total_ns
        names = set(self.kernels) | set(self.counters)
        for b in session.scalars(
            select(BuildResource).where(
                BuildResource.run_id == rw.run_id, BuildResource.kernel.in_(names)
            )
        ):
            self.resources[b.kernel] = {r: getattr(b, r) for r in RESOURCES}

    def dram_bytes(self) -> dict[str, float] | None:
        """Per captured kernel, the DRAM bytes it read and wrote (None without captures)."""
        if not self.counters:
            return None
        return {k: sum(c.get(name, 0.0) for name in DRAM) for k, c in self.counters.items()}

    def time_ns(self, kernel: str, timeline: bool) -> float | None:
        if timeline:
            return self.timeline.get(kernel)
        return self.counters.get(kernel, {}).get(DURATION)


def kernel_changes(
    kernels: list[str], base: dict[str, float], head: dict[str, float], workload_change: float
) -> list[dict[str, Any]]:
    """Per kernel: its base and head time, its change and its share of the workload's slowdown
    (the kernels whose time grew share it by how much each grew). A workload of one kernel
    gives that kernel the workload's measured change and all of the slowdown, timed or not."""
    if len(kernels) == 1:
        k = kernels[0]
        share = 1.0 if workload_change > 0 else 0.0
        return [_row(k, base.get(k), head.get(k), workload_change, share)]
    both = [k for k in kernels if k in head and base.get(k)]
    grew = {k: head[k] - base[k] for k in both if head[k] > base[k]}
    total = sum(grew.values())
    rows = [
        _row(k, base[k], head[k], head[k] / base[k] - 1, grew.get(k, 0.0) / total if total else 0.0)
        for k in both
    ]
    return sorted(rows, key=lambda r: -r["share"])


def _row(
    kernel: str, base_ns: float | None, head_ns: float | None, change: float, share: float
) -> dict[str, Any]:
    return {"kernel": kernel, "base_ns": base_ns, "head_ns": head_ns, "change": change,
            "share": share}  # fmt: skip


def _moved_metrics(
    base: dict[str, float], head: dict[str, float], labels: dict[str, str]
) -> list[dict[str, Any]]:
    """The counters that moved most, each with its label (ncu's name where the runner sent none)."""
    rows = []
    for name in sorted(set(base) & set(head)):
        before, after = base[name], head[name]
        # From zero a counter is new: no percentage says how far it moved (None).
        moved = (after - before) / abs(before) if before else (0.0 if after == before else None)
        rows.append({"metric": name, "label": labels.get(name, name), "base": before,
                     "head": after, "change": moved})  # fmt: skip
    rows.sort(key=lambda m: -abs(m["change"]) if m["change"] is not None else -math.inf)
    return rows[:MOVED_METRICS]


STALL = "smsp__average_warps_issue_stalled_"
TOP_STALLS = 3


def top_stalls(base: dict[str, float], head: dict[str, float]) -> list[dict[str, Any]]:
    """The head's top warp-stall reasons (warps stalled per issued instruction), with the
    base's value of each: where the warps wait."""
    reasons = [
        {"reason": _reason(name), "base": base.get(name), "head": value}
        for name, value in head.items()
        if name.startswith(STALL)
        and name.endswith("_per_issue_active.ratio")
        and "selected" not in name  # "selected" is the one issuing, not a stall
    ]
    return sorted(reasons, key=lambda r: -r["head"])[:TOP_STALLS]


def _reason(name: str) -> str:
    return name[len(STALL) : -len("_per_issue_active.ratio")].replace("_", " ")


def _explain_kernel(row: dict[str, Any], base: _Side, head: _Side) -> dict[str, Any]:
    kernel = row["kernel"]
    b, h = base.counters.get(kernel), head.counters.get(kernel)
    out: dict[str, Any] = {**row, "ncu": b is not None and h is not None, "causes": []}
    if b is not None and h is not None:
        t_head = h.get(DURATION, 0.0)
        change = row["change"]
        # The kernel's slowdown on ncu's clock, from the measured (or timeline) change: ncu's
        # own two durations are one launch each, with clocks as they were.
        slowdown = t_head * change / (1 + change) if change > -1 else 0.0
        out["causes"] = [c.as_dict() for c in rank(candidates(b, h), slowdown)]
        out["metrics"] = _moved_metrics(b, h, head.labels.get(kernel, {}))
        out["legacy"] = L1_SECTORS not in h  # captured before the counters that rank causes
        out["stalls"] = top_stalls(b, h)
        fb, fh = base.findings.get(kernel, {}), head.findings.get(kernel, {})
        out["findings_appeared"] = [
            {"rule": r, "estimated_speedup": fh[r]} for r in sorted(set(fh) - set(fb))
        ]
    rb, rh = base.resources.get(kernel), head.resources.get(kernel)
    out["resources"] = [
        {"resource": r, "base": rb[r], "head": rh[r]}
        for r in RESOURCES
        if rb is not None and rh is not None and rb[r] != rh[r]
    ]
    return out


def attribute(
    session: Session,
    series: Series,
    head_run: Run,
    base_run: Run | None,
    change: float,
    base_series: Series | None = None,
) -> dict[str, Any]:
    """The alert's attribution: kernels, ranked causes with shares, findings, one-line summary;
    `base_series`: the workload as the base run measured it, where a commit redefined it in
    place (its kernels are paired by name all the same)."""
    base = _Side(session, base_run, base_series or series)
    head = _Side(session, head_run, series)
    timeline = bool(base.timeline) and bool(head.timeline)
    names = kernel_names.attributed(head.kernels, [*head.timeline, *head.counters])
    times = [
        {k: t for k in names if (t := side.time_ns(k, timeline)) is not None}
        for side in (base, head)
    ]
    # Which kernels ran, where that changed (a graph break, another op): the author's change.
    sets = [dict.fromkeys(side.timeline if timeline else side.counters) for side in (base, head)]
    for side, seen in zip((base, head), sets, strict=True):
        seen.update({k: side.time_ns(k, timeline) for k in seen})
    moved_set = kernel_set_change(*sets, *(s.dram_bytes() for s in (base, head)))
    rows = kernel_changes(names, times[0], times[1], change)
    # What the author turned (num_stages, num_warps, an autotuner's config): named first too.
    turned = knobs.knob_changes(
        base.compiled, head.compiled, [r["kernel"] for r in rows],
        base.resources.keys() & head.resources.keys(),
    )  # fmt: skip
    named = [r for r in rows if r["share"] >= MIN_KERNEL_SHARE][:MAX_KERNELS]
    kernels = [_explain_kernel(r, base, head) for r in named]
    causes = [
        {**c, "kernel": k["kernel"], "workload_share": min(c["share"], 1.0) * k["share"]}
        for k in kernels
        for c in k["causes"]
    ]
    causes.sort(key=lambda c: -c["workload_share"])
    upgraded = software.changes(base_run.environment, head_run.environment) if base_run else []
    chose = software.differences(base.choices, head.choices) if base_run else []
    # Nothing that determines the kernels changed: the time went around them.
    same = base_run is not None and host_time.same_kernels(base.determinants, head.determinants)
    host = None
    if same:
        if series.unit == "us":
            host = host_time.host_time(base.timeline, head.timeline, base.median, head.median)
        about = f"{describe_workload(series.workload, series.params)} {change:+.1%}"
        also = beside_kernels(upgraded, chose)
        text = f"{about}: {host_time.describe(host)}" + (f"; {also}" if also else "")
    else:
        text = summary(
            series, change, kernels, causes, bool(head.counters), base_series, upgraded, chose,
            moved_set, turned,
        )  # fmt: skip
    return {
        "summary": text,
        "kernel_set": moved_set.as_dict() if moved_set is not None else None,
        "compiled": [t.as_dict() for t in turned],
        "same_kernels": same,
        "host_time": host.as_dict() if host is not None else None,
        "software": upgraded,
        "choices": chose,
        "kernel_times": "timeline" if timeline else "ncu",
        "kernels": kernels,
        "causes": causes,
        "base_run": base_run.run_uuid if base_run else None,
        "head_run": head_run.run_uuid,
    }

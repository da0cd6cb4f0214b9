"""Why a kernel got slower: what moved in ncu, in ptxas's resources and in ncu's findings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.models import BuildResource, NcuKernel, Run, RunWorkload, Series

# Short names for the runner's fixed ncu metric set, as a person reads them in a summary.
METRIC_LABELS = {
    "gpu__time_duration.sum": "ncu duration",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM throughput",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory throughput",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "launch__registers_per_thread": "registers/thread",
    "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": "long-scoreboard stall",
    "dram__bytes_read.sum": "DRAM read",
    "dram__bytes_write.sum": "DRAM written",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "FMA pipe",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe",
    "lts__t_sector_hit_rate.pct": "L2 hit rate",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared store bank conflicts",
}
RESOURCES = ("registers", "spill_stores_bytes", "spill_loads_bytes", "shared_bytes")


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


def _workload(session: Session, run_id: int, series: Series) -> RunWorkload | None:
    return session.scalars(
        select(RunWorkload).where(
            RunWorkload.run_id == run_id,
            RunWorkload.name == series.workload,
            RunWorkload.params_key == series.params_key,
        )
    ).first()


def _captures(session: Session, rw: RunWorkload | None) -> list[NcuKernel]:
    if rw is None:
        return []
    return list(
        session.scalars(
            select(NcuKernel).where(NcuKernel.run_workload_id == rw.id).order_by(NcuKernel.id)
        )
    )


def _metrics(captures: list[NcuKernel]) -> dict[str, tuple[float, str]]:
    return {name: (v["value"], v["unit"]) for c in captures for name, v in c.metrics.items()}


def _findings(captures: list[NcuKernel]) -> dict[str, float | None]:
    return {f["rule"]: f["estimated_speedup"] for c in captures for f in c.findings}


def _resources(session: Session, run_id: int, kernels: list[str]) -> dict[str, dict[str, int]]:
    return {
        b.kernel: {r: getattr(b, r) for r in RESOURCES}
        for b in session.scalars(
            select(BuildResource).where(
                BuildResource.run_id == run_id, BuildResource.kernel.in_(kernels)
            )
        )
    }


def attribute(
    session: Session, series: Series, head_run: Run, base_run: Run | None, change: float
) -> dict[str, Any]:
    """The alert's attribution and its one-line summary."""
    head_rw = _workload(session, head_run.id, series)
    base_rw = _workload(session, base_run.id, series) if base_run else None
    head_c, base_c = _captures(session, head_rw), _captures(session, base_rw)
    head_m, base_m = _metrics(head_c), _metrics(base_c)
    metrics = []
    for name in sorted(set(head_m) & set(base_m)):
        (after, unit), (before, _) = head_m[name], base_m[name]
        moved = (after - before) / abs(before) if before else (0.0 if after == before else 1.0)
        metrics.append(
            {
                "metric": name,
                "label": METRIC_LABELS.get(name, name),
                "unit": unit,
                "base": before,
                "head": after,
                "change": moved,
            }
        )
    metrics.sort(key=lambda m: -abs(m["change"]))
    kernels = list(head_rw.kernels) if head_rw else [series.kernel]
    head_r = _resources(session, head_run.id, kernels)
    base_r = _resources(session, base_run.id, kernels) if base_run else {}
    resources = [
        {"kernel": k, "resource": r, "base": base_r[k][r], "head": head_r[k][r]}
        for k in kernels
        if k in head_r and k in base_r
        for r in RESOURCES
        if head_r[k][r] != base_r[k][r]
    ]
    head_f, base_f = _findings(head_c), _findings(base_c)
    appeared = [
        {"rule": r, "estimated_speedup": head_f[r]} for r in sorted(set(head_f) - set(base_f))
    ]
    vanished = [
        {"rule": r, "estimated_speedup": base_f[r]} for r in sorted(set(base_f) - set(head_f))
    ]
    summary = _summary(series, change, metrics, resources, appeared, ncu=bool(head_m))
    return {
        "summary": summary,
        "ncu_metrics": metrics,
        "resources": resources,
        "findings_appeared": appeared,
        "findings_vanished": vanished,
        "base_run": base_run.run_uuid if base_run else None,
        "head_run": head_run.run_uuid,
    }


def _value(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    return f"{value:.3g}"


def _summary(
    series: Series,
    change: float,
    metrics: list[dict],
    resources: list[dict],
    appeared: list[dict],
    ncu: bool,
) -> str:
    parts = []
    for r in resources:
        label = {
            "registers": "registers",
            "spill_stores_bytes": "spill stores",
            "spill_loads_bytes": "spill loads",
            "shared_bytes": "shared memory",
        }[r["resource"]]
        parts.append(f"{label} {r['base']}→{r['head']}")
    for m in metrics:
        if m["metric"] in ("gpu__time_duration.sum", "launch__registers_per_thread"):
            continue  # the duration is the symptom; registers come from ptxas above
        if abs(m["change"]) < 0.05 or len(parts) >= 4:
            break
        parts.append(f"{m['label']} {_value(m['base'], m['unit'])}→{_value(m['head'], m['unit'])}")
    for f in appeared[:2]:
        speedup = f" (est. {f['estimated_speedup']:.0f}%)" if f["estimated_speedup"] else ""
        parts.append(f"new finding {f['rule']}{speedup}")
    if not parts:
        parts.append("no ncu or ptxas change recorded" if ncu else "no ncu data for this run")
    head = f"{series.kernel} {describe_workload(series.workload, series.params)} {change:+.1%}"
    return f"{head}: {', '.join(parts)}"

"""The commit page (/commits/{sha} and its twin /commits/{sha}.json): every workload and kernel
measured at a commit, with throughput against the device's peak and the alerts it touched."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from dashboards.devices import DevicePeak, achieved, device_peak
from dashboards.figures import breakdown_figure, change_figure
from dashboards.format import fmt_value, params_label, series_label
from dashboards.model import ChangeBar, ShareRow
from service.analysis.verdicts import class_target
from service.evaluation.reads.commit_metrics import commit_metrics, latest_runs
from service.pages.render import html_page, json_twin
from service.schemas.metrics import AbsentSeries, MetricPublic, WorkloadPublic
from service.store.history.commits import resolve_commit
from service.web.deps import SessionDep, ShaPath

router = APIRouter(tags=["pages"])
MAX_BARS = 40


def commit_data(
    session: Session, sha: str, repository: str | None, branch: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Everything at one commit, with throughput against the device's peak per timed launch."""
    commit, repo = resolve_commit(session, sha, repository)
    metrics = commit_metrics(session, commit, repo, branch)
    runs = {r.run_uuid: r for r in latest_runs(session, commit, metrics.branch)}
    peaks = {
        uuid: device_peak(r.environment.get("gpu") or {}, r.environment.get("clocks_mhz"))
        for uuid, r in runs.items()
    }
    rows, bars, breakdowns = [], [], {}
    for w in metrics.workloads:
        # Work counters that changed, beside the timing verdict: a notice, never a verdict.
        work = [
            wv.note if len(w.kernels) == 1 else f"{k.kernel} {wv.note}"
            for k in w.kernels
            for wv in k.work
            if wv.verdict == "changed"
        ]
        for k in w.kernels:
            for mp in k.metrics:
                row = _row(w, k.kernel, mp, peaks.get(w.run_id))
                row["work"] = work
                rows.append(row)
                if mp.change is not None:
                    bars.append(_bar(w, k.kernel, mp, row["baseline_median"]))
        if w.timeline and w.timeline.kernels:
            title = f"{w.workload} {params_label(w.params)}"
            if title in breakdowns:  # the same workload measured on a second GPU
                title += f" (run {w.run_id[:8]})"
            breakdowns[title] = [
                ShareRow(t.kernel, t.calls, t.total_ns, t.share) for t in w.timeline.kernels
            ]
    bars.sort(key=lambda b: -abs(b.change))
    broken, not_measured = _broken_rows(metrics.workloads, metrics.absent)
    data = {
        # Its alerts, what a bisection found here and the verdict counts (a regression counted
        # where a bisection found it came in) as the commit's metrics tell them.
        **metrics.model_dump(mode="json"),
        # A workload that ran and failed (its correctness, say) is a broken row of the table;
        # "not measured" is left for what this run did not run at all.
        "rows": broken + rows,
        "not_measured": not_measured,
        "run_details": [_run_detail(r, peaks[uuid]) for uuid, r in runs.items()],
    }
    for found in data["found_here"]:
        found["series"] = series_label(found["workload"], found["params"], found["kernel"])
    figures: dict[str, Any] = {}
    if bars:
        figures["changes"] = change_figure(bars[:MAX_BARS])
    for i, (title, shares) in enumerate(breakdowns.items()):
        figures[f"breakdown{i}"] = breakdown_figure(shares, title=title)
    data["breakdown_titles"] = list(breakdowns)
    return data, figures


# A row that is no duration (or was not measured) has no throughput to show.
NO_THROUGHPUT = dict.fromkeys(("tflops", "gbps", "flop_fraction", "byte_fraction", "bound"))


def _bar(w: WorkloadPublic, kernel: str, mp: MetricPublic, baseline: float | None) -> ChangeBar:
    hover = f"{fmt_value(baseline, mp.unit)} → {fmt_value(mp.statistics.median, mp.unit)}"
    target = class_target(baseline) if mp.unit == "us" and baseline else None
    label = series_label(w.workload, w.params, kernel)
    return ChangeBar(label, mp.change or 0.0, mp.verdict or "unchanged", hover, target)


def _broken_rows(
    workloads: list[WorkloadPublic], absent: list[AbsentSeries]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(table rows of the broken series whose workload ran, the other absent series)."""
    ran = {(w.workload, params_label(w.params)): w for w in workloads}
    rows, rest = [], []
    for a in absent:
        w = ran.get((a.workload, params_label(a.params)))
        if a.verdict != "broken" or w is None:
            rest.append(a.model_dump(mode="json"))
            continue
        failed = w.correctness is not None and not w.correctness.passed
        rows.append({
            "workload": a.workload, "params": a.params, "kernel": a.kernel, "metric": a.metric,
            "unit": "", "series_id": a.series_id, "median": None, "rel_iqr": None,
            "baseline_median": None, "baseline_commit": None, "baseline_results": 0,
            "segment": None, "change": None, "verdict": "broken", "q_value": None,
            "note": a.note or (f"{w.status}: {w.error}" if w.error else w.status),
            "error_norm": w.correctness.error_norm if w.correctness else None,
            "correct": False if failed else None, "work": [], **NO_THROUGHPUT,
        })  # fmt: skip
    return rows, rest


def _row(w: WorkloadPublic, kernel: str, mp: MetricPublic, peak: DevicePeak | None) -> dict:
    """One series at the commit; a duration also gets throughput and its fraction of peak."""
    segment = mp.baseline.segment if mp.baseline else None
    row: dict[str, Any] = {
        "workload": w.workload,
        "params": w.params,
        "kernel": kernel,
        "metric": mp.metric,
        "unit": mp.unit,
        "series_id": mp.series_id,
        "median": mp.statistics.median,
        "rel_iqr": mp.statistics.rel_iqr,
        "baseline_median": mp.baseline.median if mp.baseline else None,
        "baseline_commit": mp.baseline.commit if mp.baseline else None,
        "baseline_results": mp.baseline.results if mp.baseline else 0,
        # Where the level compared with starts, and why (a shift, or the history read).
        "segment": segment.model_dump() if segment else None,
        "note": mp.analysis.note if mp.analysis else "",
        "change": mp.change,
        "verdict": mp.verdict,
        "bisected_to": mp.bisected_to,
        "q_value": mp.analysis.q_value if mp.analysis else None,
        "error_norm": w.correctness.error_norm if w.correctness else None,
        "correct": w.correctness.passed if w.correctness else None,
        **NO_THROUGHPUT,
    }
    if mp.metric == "duration" and mp.unit == "us":
        precision = w.correctness.precision if w.correctness else "fp32"
        got = achieved(w.flops, w.bytes, mp.statistics.median * 1e-6, peak, precision)
        row.update(
            tflops=got.flops_per_s / 1e12 if got.flops_per_s else None,
            gbps=got.bytes_per_s / 1e9 if got.bytes_per_s else None,
            flop_fraction=got.flop_fraction,
            byte_fraction=got.byte_fraction,
            bound=got.bound,
        )
    return row


def _run_detail(run: Any, peak: Any) -> dict[str, Any]:
    env = run.environment or {}
    return {
        "run_id": run.run_uuid,
        "suite": run.suite,
        "status": run.status,
        "gpu": env.get("gpu", {}),
        "driver_version": env.get("driver_version"),
        "cuda_runtime_version": env.get("cuda_runtime_version"),
        "clocks_mhz": env.get("clocks_mhz", {}),
        "throttle_reasons_seen": env.get("throttle_reasons_seen", []),
        "peak": None
        if peak is None
        else {
            "name": peak.name,
            "flops": peak.flops,
            "bytes_per_s": peak.bytes_per_s,
            "source": peak.source,
        },
        "build_status": run.build_status,
        "build_seconds": run.build_seconds,
        "build_log_tail": run.build_log_tail,
        "log_tail": run.log_tail,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat(),
    }


# The twin before the page: /commits/{sha} would otherwise match abc.json.
@router.get("/commits/{sha}.json")
def commit_json(
    sha: ShaPath, session: SessionDep, repository: str | None = None, branch: str | None = None
) -> Response:
    """The commit page's data: the commit's metrics, derived rows and its runs' details."""
    return json_twin(commit_data(session, sha, repository, branch)[0])


@router.get("/commits/{sha}", response_class=HTMLResponse, include_in_schema=False)
def commit_page(
    request: Request,
    sha: ShaPath,
    session: SessionDep,
    repository: str | None = None,
    branch: str | None = None,
) -> HTMLResponse:
    """Commit: every workload and kernel measured at a commit."""

    def build() -> dict[str, Any]:
        data, figures = commit_data(session, sha, repository, branch)
        suffix = request.url.query
        return {
            "title": f"Commit {sha[:10]}",
            "json_url": f"/commits/{sha}.json" + (f"?{suffix}" if suffix else ""),
            "data": data,
            "figures": figures,
        }

    return html_page(request, "commit.html", build)

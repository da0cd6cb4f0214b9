"""Everything stored at one commit: results with baselines and verdicts, profiles, builds."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import orjson
from sqlalchemy import Row, Text, cast, select
from sqlalchemy.orm import Session

from service.analysis.work import MIN_PAIRS, WORK_LABELS, describe
from service.core.sql import among
from service.evaluation.commit_baselines import baselines_at
from service.models import (
    BuildResource,
    ChangePoint,
    Commit,
    CorrectnessOutcome,
    NcuKernel,
    Result,
    Run,
    RunWorkload,
    Series,
    TimelineEntry,
    Verdict,
    WorkVerdict,
)
from service.schemas import metrics as m
from service.store.commits import commit_public, statistics_data


def latest_runs(session: Session, commit: Commit, branch: str | None) -> list[Run]:
    """The newest run per (suite, fingerprint) at this commit on the branch."""
    query = (
        select(Run)
        .where(Run.commit_id == commit.id)
        .order_by(Run.finished_at.desc(), Run.id.desc())
    )
    runs = list(session.scalars(query))
    if branch is not None:
        runs = [r for r in runs if r.branch == branch]
    elif runs:
        branch = runs[0].branch
        runs = [r for r in runs if r.branch == branch]
    chosen: dict[tuple[str, str], Run] = {}
    for run in runs:
        chosen.setdefault((run.suite, run.fingerprint), run)
    return list(chosen.values())


# Plain columns throughout: a commit of a 200-workload suite has over a thousand rows to show,
# and ORM objects (identity map, JSON columns nobody reads) would cost more than the queries.
_WORKLOAD = [
    RunWorkload.id, RunWorkload.run_id, RunWorkload.name, RunWorkload.params,
    RunWorkload.kernels, RunWorkload.status, RunWorkload.error, RunWorkload.flops,
    RunWorkload.bytes_moved, RunWorkload.timeline_source, RunWorkload.timeline_note,
    RunWorkload.ncu_status, RunWorkload.ncu_note,
]  # fmt: skip
_WORK = [
    WorkVerdict.run_workload_id, WorkVerdict.kernel, WorkVerdict.counter, WorkVerdict.label,
    WorkVerdict.value,
    WorkVerdict.base_value, WorkVerdict.change, WorkVerdict.verdict, WorkVerdict.tolerance,
    WorkVerdict.pairs,
]  # fmt: skip
_CORRECTNESS = [
    CorrectnessOutcome.passed, CorrectnessOutcome.error_norm, CorrectnessOutcome.tolerance,
    CorrectnessOutcome.norm, CorrectnessOutcome.precision, CorrectnessOutcome.unwritten,
]  # fmt: skip
_RESULT = [
    Result.id, Result.run_workload_id, Result.series_id, Result.method, Result.sm_clock_mhz,
    Result.n, Result.median, Result.q1, Result.q3, Result.min, Result.max, Result.mean,
    Result.stdev, Series.kernel, Series.metric, Series.unit,
]  # fmt: skip
_VERDICT = [
    Verdict.result_id, Verdict.series_id, Verdict.verdict, Verdict.change, Verdict.p_value,
    Verdict.q_value, Verdict.floor, Verdict.baseline_median, Verdict.baseline_results,
    Verdict.note, Verdict.segment_start_commit_id, Verdict.segment_kind, Verdict.segment_results,
    Verdict.segment_note, Verdict.baseline_commits, Verdict.redefined_from_series_id,
    Verdict.run_offset, Verdict.offset_controls,
]  # fmt: skip


def commit_metrics(
    session: Session, commit: Commit, repository: str, branch: str | None
) -> m.CommitMetrics:
    """The answer as a model, for the pages that read it."""
    return m.CommitMetrics.model_validate(commit_metrics_data(session, commit, repository, branch))


def commit_metrics_data(
    session: Session,
    commit: Commit,
    repository: str,
    branch: str | None,
    raw_ncu: bool = False,
) -> dict[str, Any]:
    """The answer of GET /api/v1/commits/{sha}/metrics as plain data (m.CommitMetrics' shape).

    Plain dicts: a 200-workload commit's answer has some 1,500 objects, and building each as a
    model cost more than the queries; the route writes the dicts out with orjson, and the tests
    hold its output to the model. With `raw_ncu` the kernels' ncu metrics and findings are the
    stored JSON text as orjson fragments, written out as they are: parsing and writing them
    again was ~7 ms of a 200-workload commit's answer."""
    runs = latest_runs(session, commit, branch)
    branch = runs[0].branch if runs else branch
    run_by_id = {r.id: r for r in runs}
    # The runs are read before what they qualify: "not pending" then holds for every row read
    # after them (outside a transaction, SQLite reads each statement afresh, as PostgreSQL does).
    analysis_pending = any(r.analysed_at is None for r in runs)
    change_points_pending = any(r.change_points_at is None for r in runs)
    # With each workload its correctness outcome (at most one): a join, not a second read.
    workloads = session.execute(
        select(*_WORKLOAD, *_CORRECTNESS)
        .outerjoin(CorrectnessOutcome, CorrectnessOutcome.run_workload_id == RunWorkload.id)
        .where(among(session, RunWorkload.run_id, run_by_id))
        .order_by(RunWorkload.id)
    ).all()
    # The workloads' rows by a sub-select rather than by their hundreds of ids.
    wl_query = select(RunWorkload.id).where(among(session, RunWorkload.run_id, run_by_id))
    result_rows = session.execute(
        select(*_RESULT)
        .join(Series, Series.id == Result.series_id)
        .where(among(session, Result.run_id, run_by_id))
    ).all()
    verdicts = session.execute(
        select(*_VERDICT).where(among(session, Verdict.run_id, run_by_id))
    ).all()
    by_result = {v.result_id: v for v in verdicts if v.result_id is not None}
    baselines = baselines_at(session, result_rows, branch or "", commit, by_result)
    segments = _segments(session, verdicts)
    shifts = _change_points(session, commit, branch, {r.series_id for r in result_rows})
    metrics_by_wl: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for r in result_rows:
        base = baselines.get(r.id)
        verdict = by_result.get(r.id)
        segment = segments.get(r.id)
        compared = verdict is not None and verdict.baseline_median is not None
        metric = {
            "series_id": r.series_id,
            "metric": r.metric,
            "unit": r.unit,
            "method": r.method,
            "sm_clock_mhz": r.sm_clock_mhz,
            "statistics": statistics_data(r),
            # The verdict's baseline once there is one, so that the change shown is the one
            # the verdict judged; else the nearest earlier result.
            "baseline": {
                "commit": base.sha,
                "run_id": base.run_uuid,
                "median": verdict.baseline_median if compared else base.median,
                "committed_at": base.committed_at,
                "results": verdict.baseline_results if compared else 1,
                "segment": segment,
            }
            if base
            else None,
            "change": verdict.change
            if compared
            else ((r.median - base.median) / base.median if base else None),
            "verdict": verdict.verdict if verdict else None,
            "analysis": _analysis(verdict, segment) if verdict else None,
            "change_point": shifts.get(r.series_id),
        }
        metrics_by_wl[r.run_workload_id].append((r.kernel, metric))
    # A kernel's capture is one row, its metrics and findings already in the answer's shape.
    ncu: dict[int, dict[str, tuple[dict[str, Any], list[Any]]]] = defaultdict(dict)
    stored: tuple[Any, Any] = (NcuKernel.metrics, NcuKernel.findings)
    if raw_ncu:
        stored = (cast(NcuKernel.metrics, Text), cast(NcuKernel.findings, Text))
    for wl_id, kernel, ncu_metrics, ncu_findings in session.execute(
        select(NcuKernel.run_workload_id, NcuKernel.kernel, *stored).where(
            NcuKernel.run_workload_id.in_(wl_query)
        )
    ):
        if raw_ncu:
            ncu_metrics, ncu_findings = orjson.Fragment(ncu_metrics), orjson.Fragment(ncu_findings)
        ncu[wl_id][kernel] = (ncu_metrics, ncu_findings)
    work: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for wv in session.execute(
        select(*_WORK).where(WorkVerdict.run_workload_id.in_(wl_query)).order_by(WorkVerdict.id)
    ):
        work[wv.run_workload_id][wv.kernel].append(work_public(wv))
    timeline: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in session.execute(
        select(
            TimelineEntry.run_workload_id,
            TimelineEntry.kernel,
            TimelineEntry.calls,
            TimelineEntry.total_ns,
            TimelineEntry.share,
        )
        .where(TimelineEntry.run_workload_id.in_(wl_query))
        .order_by(TimelineEntry.total_ns.desc())
    ):
        timeline[t.run_workload_id].append(
            {"kernel": t.kernel, "calls": t.calls, "total_ns": t.total_ns, "share": t.share}
        )
    builds: dict[tuple[int, str], dict[str, Any]] = {
        (b.run_id, b.kernel): {
            "registers": b.registers,
            "shared_bytes": b.shared_bytes,
            "spill_stores_bytes": b.spill_stores_bytes,
            "spill_loads_bytes": b.spill_loads_bytes,
            "compile_seconds": b.compile_seconds,
            "arch": b.arch,
        }
        for b in session.execute(
            select(
                BuildResource.run_id,
                BuildResource.kernel,
                BuildResource.registers,
                BuildResource.shared_bytes,
                BuildResource.spill_stores_bytes,
                BuildResource.spill_loads_bytes,
                BuildResource.compile_seconds,
                BuildResource.arch,
            ).where(among(session, BuildResource.run_id, run_by_id))
        )
    }
    return {
        "commit": commit_public(commit, repository).model_dump(),
        "branch": branch,
        "runs": [
            {
                "run_id": r.run_uuid,
                "suite": r.suite,
                "branch": r.branch,
                "status": r.status,
                "build_status": r.build_status,
                "fingerprint": r.fingerprint,
                "gpu_name": r.gpu_name,
                "finished_at": r.finished_at,
            }
            for r in runs
        ],
        "workloads": [
            _workload(
                w,
                run_by_id[w.run_id],
                metrics_by_wl[w.id],
                ncu[w.id],
                work[w.id],
                builds,
                _correctness(w),
                timeline.get(w.id),
            )
            for w in workloads
        ],
        "absent": _absent(session, [v for v in verdicts if v.result_id is None]),
        "verdict_counts": dict(Counter(v.verdict for v in verdicts)),
        "analysis_pending": analysis_pending,
        "change_points_pending": change_points_pending,
    }


def _change_points(
    session: Session, commit: Commit, branch: str | None, series_ids: set[int]
) -> dict[int, dict[str, Any]]:
    """Per series, the change point on the branch whose first commit is this one."""
    if branch is None or not series_ids:
        return {}
    rows = session.execute(
        select(
            ChangePoint.series_id,
            ChangePoint.before_median,
            ChangePoint.after_median,
            ChangePoint.change,
        ).where(
            ChangePoint.commit_id == commit.id,
            ChangePoint.branch == branch,
            among(session, ChangePoint.series_id, series_ids),
        )
    )
    return {
        cp.series_id: {
            "commit": commit.sha,
            "committed_at": commit.committed_at,
            "before_median": cp.before_median,
            "after_median": cp.after_median,
            "change": cp.change,
        }
        for cp in rows
    }


def _segments(session: Session, verdicts: list[Row[Any]]) -> dict[int, dict[str, Any]]:
    """Per result, where its verdict's baseline segment starts and why."""
    starts = {v.segment_start_commit_id for v in verdicts if v.segment_start_commit_id}
    if not starts:
        return {}
    shas = dict(
        session.execute(
            select(Commit.id, Commit.sha).where(among(session, Commit.id, starts))
        ).all()
    )
    return {
        v.result_id: {
            "start_commit": shas[v.segment_start_commit_id],
            "kind": v.segment_kind,
            "results": v.segment_results or 0,
            "reason": v.segment_note,
        }
        for v in verdicts
        if v.result_id is not None and v.segment_start_commit_id in shas
    }


def _analysis(v: Row[Any], segment: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "verdict": v.verdict,
        "change": v.change,
        "p_value": v.p_value,
        "q_value": v.q_value,
        "floor": v.floor,
        "baseline_median": v.baseline_median,
        "baseline_results": v.baseline_results,
        "note": v.note,
        "segment": segment,
        "redefined_from_series": v.redefined_from_series_id,
        # The run's common offset taken out of the change, and the unchanged kernels behind it.
        "run_offset": {"offset": v.run_offset, "controls": v.offset_controls}
        if v.offset_controls
        else None,
    }


def work_public(wv: WorkVerdict | Row[Any]) -> dict[str, Any]:
    label = wv.label or WORK_LABELS.get(wv.counter, wv.counter)
    note = describe(label, wv.change) if wv.verdict == "changed" else ""
    if wv.verdict == "learning":
        note = (f"not yet shown steady on this kernel: {wv.pairs} of {MIN_PAIRS} pairs of runs "
                "of unchanged code; shown, no notice")  # fmt: skip
    return {"counter": wv.counter, "label": label, "value": wv.value,
            "base_value": wv.base_value, "change": wv.change, "verdict": wv.verdict,
            "tolerance": wv.tolerance, "pairs": wv.pairs, "note": note}  # fmt: skip


def _absent(session: Session, verdicts: list[Row[Any]]) -> list[dict[str, Any]]:
    if not verdicts:
        return []
    series = {
        s.id: s
        for s in session.scalars(
            select(Series).where(among(session, Series.id, {v.series_id for v in verdicts}))
        )
    }
    return [
        {
            "series_id": v.series_id,
            "workload": series[v.series_id].workload,
            "params": series[v.series_id].params,
            "kernel": series[v.series_id].kernel,
            "metric": series[v.series_id].metric,
            "verdict": v.verdict,
            "note": v.note,
        }
        for v in verdicts
    ]


def _correctness(w: Row[Any]) -> dict[str, Any] | None:
    """The workload row's joined correctness outcome, if it has one."""
    if w.passed is None:
        return None
    return {"passed": w.passed, "error_norm": w.error_norm, "tolerance": w.tolerance,
            "norm": w.norm, "precision": w.precision, "unwritten": w.unwritten}  # fmt: skip


def _workload(
    w: Row[Any],
    run: Run,
    metrics: list[tuple[str, dict[str, Any]]],
    ncu: dict[str, tuple[dict[str, Any], list[Any]]],
    work: dict[str, list[dict[str, Any]]],
    builds: dict[tuple[int, str], dict[str, Any]],
    correctness: dict[str, Any] | None,
    timeline: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    names = list(dict.fromkeys([*(k for k, _ in metrics), *w.kernels, *ncu]))
    kernels = [
        {
            "kernel": name,
            "metrics": [mp for k, mp in metrics if k == name],
            "ncu_metrics": ncu[name][0] if name in ncu else {},
            "ncu_findings": ncu[name][1] if name in ncu else [],
            "build": builds.get((run.id, name)),
            "work": work.get(name, []),
        }
        for name in names
    ]
    return {
        "workload": w.name,
        "params": w.params,
        "run_id": run.run_uuid,
        "fingerprint": run.fingerprint,
        "status": w.status,
        "error": w.error,
        "flops": w.flops,
        "bytes": w.bytes_moved,
        "correctness": correctness,
        "timeline": {
            "source": w.timeline_source,
            "note": w.timeline_note,
            "kernels": timeline or [],
        }
        if w.timeline_source
        else None,
        "ncu_status": w.ncu_status,
        "ncu_note": w.ncu_note,
        "kernels": kernels,
    }

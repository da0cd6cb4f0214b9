"""A commit's results as its metrics answer shows them: each with its statistics, the baseline
beside it, its verdict's analysis and the change point that starts there."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from service.evaluation.reads.commit_baselines import baselines_at
from service.models import Commit
from service.store.history.commits import statistics_data
from service.store.history.series import bisected_heads
from service.store.reads import commit_reads as reads

# Per run workload, (kernel, metric) of each of its results.
Metrics = dict[int, list[tuple[str, dict[str, Any]]]]


def result_metrics(
    session: Session,
    commit: Commit,
    branch: str | None,
    run_ids: list[int],
    verdicts: list[Row[Any]],
) -> Metrics:
    """The runs' results as the answer's metrics, by run workload."""
    rows = reads.results(session, run_ids)
    by_result = {v.result_id: v for v in verdicts if v.result_id is not None}
    baselines = baselines_at(session, rows, branch or "", commit, by_result)
    segments = _segments(session, verdicts)
    shifts = _change_points(session, commit, branch, {r.series_id for r in rows})
    out: Metrics = defaultdict(list)
    for r in rows:
        metric = _metric(r, baselines.get(r.id), by_result.get(r.id), segments.get(r.id))
        metric["change_point"] = shifts.get(r.series_id)
        out[r.run_workload_id].append((r.kernel, metric))
    return out


def _metric(
    r: Row[Any],
    base: Any,
    verdict: Row[Any] | None,
    segment: dict[str, Any] | None,
) -> dict[str, Any]:
    # The verdict's baseline once there is one, so that the change shown is the one the verdict
    # judged; else the nearest earlier result.
    judged = verdict if verdict is not None and verdict.baseline_median is not None else None
    baseline = None
    if base:
        baseline = {
            "commit": base.sha,
            "run_id": base.run_uuid,
            "median": judged.baseline_median if judged else base.median,
            "committed_at": base.committed_at,
            "results": judged.baseline_results if judged else 1,
            "segment": segment,
        }
    change = judged.change if judged else None
    if not judged and base:
        change = (r.median - base.median) / base.median
    return {
        "series_id": r.series_id,
        "metric": r.metric,
        "unit": r.unit,
        "method": r.method,
        "sm_clock_mhz": r.sm_clock_mhz,
        "statistics": statistics_data(r),
        "baseline": baseline,
        "change": change,
        "verdict": verdict.verdict if verdict else None,
        "analysis": _analysis(verdict, segment) if verdict else None,
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


def _segments(session: Session, verdicts: list[Row[Any]]) -> dict[int, dict[str, Any]]:
    """Per result, where its verdict's baseline segment starts and why."""
    shas = reads.commit_shas(
        session, {v.segment_start_commit_id for v in verdicts if v.segment_start_commit_id}
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


def _change_points(
    session: Session, commit: Commit, branch: str | None, series_ids: set[int]
) -> dict[int, dict[str, Any]]:
    """Per series, the change point on the branch whose first commit is this one."""
    if branch is None or not series_ids:
        return {}
    found = reads.change_points(session, commit.id, branch, series_ids)
    # Where a bisection placed the shift earlier, the series' history says so: here too.
    moved = bisected_heads(session, [cp.series_id for cp in found], branch) if found else {}
    return {
        cp.series_id: {
            "commit": commit.sha,
            "committed_at": commit.committed_at,
            "before_median": cp.before_median,
            "after_median": cp.after_median,
            "change": cp.change,
            "bisected_to": moved.get((cp.series_id, commit.sha)),
        }
        for cp in found
    }

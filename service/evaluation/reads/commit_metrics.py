"""Everything stored at one commit: results with baselines and verdicts, profiles, builds."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from service.analysis.measures import MEASURES, said
from service.analysis.work import MIN_PAIRS, WORK_LABELS, describe
from service.evaluation.reads.commit_alerts import commit_alerts
from service.evaluation.reads.commit_ncu import Captures, captures
from service.evaluation.reads.commit_results import result_metrics
from service.models import Commit, Run
from service.schemas import metrics as m
from service.schemas.metrics import NcuDetail
from service.store.history.commits import commit_public, resolve_commit
from service.store.reads import commit_reads as reads
from service.store.reads.queries import check_branch

JSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


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


def commit_metrics_at(
    session: Session,
    sha: str,
    repository: str | None,
    branch: str | None,
    ncu: NcuDetail = "all",
    raw_ncu: bool = False,
) -> dict[str, Any]:
    """GET /api/v1/commits/{sha}/metrics's answer, and `kernelwatch commit`'s: of a full or
    unique short sha; NotFound, naming the branches there are, where no run is on `branch`."""
    commit, repo = resolve_commit(session, sha, repository)
    # A commit can be run on several branches (a release, a pull request): they answer apart.
    if branch is not None:
        check_branch(session, commit.repository_id, repo, branch)
    return commit_metrics_data(session, commit, repo, branch, raw_ncu=raw_ncu, ncu=ncu)


def as_json(data: dict[str, Any], indent: bool = False) -> bytes:
    """The answer written out: UTC times with a Z, the orjson fragments of raw_ncu whole."""
    return orjson.dumps(data, option=JSON_OPTIONS | (orjson.OPT_INDENT_2 if indent else 0))


def commit_metrics(
    session: Session,
    commit: Commit,
    repository: str,
    branch: str | None,
    ncu: NcuDetail = "all",
) -> m.CommitMetrics:
    """The answer as a model, for the pages that read it (the commit page shows every value)."""
    data = commit_metrics_data(session, commit, repository, branch, ncu=ncu)
    return m.CommitMetrics.model_validate(data)


def commit_metrics_data(
    session: Session,
    commit: Commit,
    repository: str,
    branch: str | None,
    raw_ncu: bool = False,
    ncu: NcuDetail = "all",
) -> dict[str, Any]:
    """The answer of GET /api/v1/commits/{sha}/metrics as plain data (m.CommitMetrics' shape),
    with `ncu` of each kernel's capture (service.evaluation.reads.commit_ncu).

    Plain dicts: a 200-workload commit's answer has some 1,500 objects, and building each as a
    model cost more than the queries; the route writes the dicts out with orjson, and the tests
    hold its output to the model. With `raw_ncu` what passes whole of the captures is orjson
    fragments of the stored JSON text."""
    runs = latest_runs(session, commit, branch)
    branch = runs[0].branch if runs else branch
    run_ids = [r.id for r in runs]
    # The runs are read before what they qualify: "not pending" then holds for every row read
    # after them (outside a transaction, SQLite reads each statement afresh, as PostgreSQL does).
    analysis_pending = any(r.analysed_at is None for r in runs)
    change_points_pending = any(r.change_points_at is None for r in runs)
    workloads = reads.workloads(session, run_ids)
    verdicts = reads.verdicts(session, run_ids)
    metrics = result_metrics(session, commit, branch, run_ids, verdicts)
    parts = _KernelParts(
        captures(session, run_ids, ncu, raw_ncu),
        _work(session, run_ids),
        {(b.run_id, b.kernel): _build(b) for b in reads.builds(session, run_ids)},
    )
    timeline = _timelines(session, run_ids)
    measures = _measures(session, run_ids)
    run_by_id = {r.id: r for r in runs}
    # What the commit's alerts say of it: a bisected first bad commit has them and no run.
    told = commit_alerts(session, commit, dict(Counter(v.verdict for v in verdicts)))
    for w_metrics in metrics.values():
        for _, mp in w_metrics:
            mp["bisected_to"] = told["moved"].get(mp["series_id"])
    if branch is None and told["alerts"]:
        branch = told["alerts"][0]["branch"]
    return {
        "commit": commit_public(commit, repository).model_dump(),
        "branch": branch,
        "runs": [_run(r) for r in runs],
        "workloads": [
            _workload(w, run_by_id[w.run_id], metrics.get(w.id, []), parts, timeline.get(w.id))
            | {"measures": measures.get(w.id, [])}
            for w in workloads
        ],
        "absent": _absent(session, [v for v in verdicts if v.result_id is None]),
        "verdict_counts": told["verdict_counts"],
        "alerts": told["alerts"],
        "found_here": told["found_here"],
        "bisected": told["bisected"],
        "analysis_pending": analysis_pending,
        "change_points_pending": change_points_pending,
        "ncu": ncu,
    }


class _KernelParts(NamedTuple):
    """What the answer shows per kernel beside its results."""

    ncu: Captures  # run workload -> kernel -> (ncu metrics, ncu findings)
    work: dict[int, dict[str, list[dict[str, Any]]]]  # run workload -> kernel -> work verdicts
    builds: dict[tuple[int, str], dict[str, Any]]  # (run, kernel) -> ptxas's resources


def _work(session: Session, run_ids: list[int]) -> dict[int, dict[str, list[dict[str, Any]]]]:
    work: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    # Unpacked by position: a commit has some 1,000 work verdicts, and a row's attributes by
    # name cost a fifth of a microsecond each.
    for wl_id, _, kernel, *fields in reads.work_verdicts(session, run_ids):
        work[wl_id][kernel].append(work_public(*fields))
    return work


def _measures(session: Session, run_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Run workload -> its measures beside the duration, each with its verdict."""
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in reads.measure_verdicts(session, run_ids):
        rule = MEASURES.get(row.measure)
        if rule is None:
            continue
        out[row.run_workload_id].append(
            {
                "measure": row.measure,
                "label": rule.label,
                "unit": rule.unit,
                "value": row.value,
                "base_value": row.base_value,
                "change": row.change,
                "verdict": row.verdict,
                "tolerance": row.tolerance,
                "said": said(row.measure, row.value, row.base_value, row.change, row.verdict),
            }
        )
    return out


def _timelines(session: Session, run_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    timeline: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in reads.timelines(session, run_ids):
        timeline[t.run_workload_id].append(
            {"kernel": t.kernel, "calls": t.calls, "total_ns": t.total_ns, "share": t.share}
        )
    return timeline


def _build(b: Row[Any]) -> dict[str, Any]:
    return {"registers": b.registers, "shared_bytes": b.shared_bytes,
            "spill_stores_bytes": b.spill_stores_bytes, "spill_loads_bytes": b.spill_loads_bytes,
            "compile_seconds": b.compile_seconds, "arch": b.arch}  # fmt: skip


def _run(r: Run) -> dict[str, Any]:
    return {"run_id": r.run_uuid, "suite": r.suite, "branch": r.branch, "status": r.status,
            "build_status": r.build_status, "fingerprint": r.fingerprint,
            "gpu_name": r.gpu_name, "finished_at": r.finished_at}  # fmt: skip


def work_public(
    counter: str,
    label: str,
    value: float,
    base_value: float | None,
    change: float | None,
    verdict: str,
    tolerance: float | None,
    pairs: int,
) -> dict[str, Any]:
    """A work verdict as the answer shows it (store.commit_reads' columns, in their order)."""
    label = label or WORK_LABELS.get(counter, counter)
    note = describe(label, change) if verdict == "changed" else ""
    if verdict == "learning":
        note = learning_note(pairs)
    return {"counter": counter, "label": label, "value": value, "base_value": base_value,
            "change": change, "verdict": verdict, "tolerance": tolerance, "pairs": pairs,
            "note": note}  # fmt: skip


def learning_note(pairs: int) -> str:
    """Why a cache counter is shown without a verdict, and what would make it speak."""
    return (
        f"not yet shown steady on this kernel: {pairs} of {MIN_PAIRS} pairs of runs that "
        "profiled its unchanged code anew; shown, no notice. A profile the runner reused from an "
        "earlier commit (nothing that determines the kernel changed) is the same measurement "
        "seen again and teaches nothing of how far the counter moves: it learns from runs that "
        "profile the kernel again, on another host or with KERNELWATCH_NCU_REUSE=0 on the runner"
    )


def _absent(session: Session, verdicts: list[Row[Any]]) -> list[dict[str, Any]]:
    series = reads.series_by_id(session, {v.series_id for v in verdicts})
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
    parts: _KernelParts,
    timeline: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    ncu, work = parts.ncu.get(w.id, {}), parts.work.get(w.id, {})
    names = list(dict.fromkeys([*(k for k, _ in metrics), *w.kernels, *ncu]))
    kernels = [
        {
            "kernel": name,
            "metrics": [mp for k, mp in metrics if k == name],
            "ncu_metrics": ncu[name][0] if name in ncu else {},
            "ncu_findings": ncu[name][1] if name in ncu else [],
            "build": parts.builds.get((run.id, name)),
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
        "correctness": _correctness(w),
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
        "compiled": w.compiled or [],
    }

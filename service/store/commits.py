"""Finding a commit by (short) sha and reading every result stored at it."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from service.core.errors import ApiError
from service.models import (
    BuildResource,
    Commit,
    CorrectnessOutcome,
    NcuFinding,
    NcuMetric,
    Repository,
    Result,
    Run,
    RunWorkload,
    Series,
    TimelineEntry,
)
from service.schemas import metrics as m

_HEX = re.compile(r"^[0-9a-f]{4,40}$")


def resolve_commit(session: Session, sha: str, repository: str | None) -> tuple[Commit, str]:
    """The one commit a full or unique short sha names, with its repository's name."""
    prefix = sha.lower()
    if not _HEX.match(prefix):
        raise ApiError(400, f"{sha[:50]!r} is not a commit sha: give 4 to 40 hex digits")
    # A range on the sha index instead of LIKE: 'g' sorts after every hex digit.
    query = (
        select(Commit, Repository.name)
        .join(Repository, Repository.id == Commit.repository_id)
        .where(Commit.sha >= prefix, Commit.sha < prefix + "g")
        .order_by(Commit.sha)
        .limit(21)
    )
    if repository is not None:
        query = query.where(Repository.name == repository)
    rows = session.execute(query).all()
    if not rows:
        where = f" in {repository}" if repository else ""
        raise ApiError(404, f"no commit {sha}{where} has results yet")
    if len(rows) > 1:
        candidates = [{"sha": c.sha, "repository": name} for c, name in rows[:20]]
        raise ApiError(
            400,
            f"{sha} is ambiguous: it matches {len(rows) if len(rows) <= 20 else 'over 20'} "
            "commits; give more digits or ?repository=",
            candidates=candidates,
        )
    return rows[0][0], rows[0][1]


def commit_public(commit: Commit, repository: str) -> m.CommitPublic:
    return m.CommitPublic(
        sha=commit.sha,
        repository=repository,
        parents=list(commit.parents),
        author_name=commit.author_name,
        author_email=commit.author_email,
        message=commit.message,
        committed_at=commit.committed_at,
    )


def statistics(r: Result) -> m.Statistics:
    return m.Statistics(
        n=r.n,
        median=r.median,
        q1=r.q1,
        q3=r.q3,
        min=r.min,
        max=r.max,
        mean=r.mean,
        stdev=r.stdev,
        rel_iqr=(r.q3 - r.q1) / r.median if r.median else 0.0,
    )


def _latest_runs(session: Session, commit: Commit, branch: str | None) -> list[Run]:
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


def _baselines(
    session: Session, results: list[Result], branch: str, commit: Commit
) -> dict[int, tuple[Result, str, str]]:
    """For each result, the nearest earlier result of its series on the branch."""
    if not results:
        return {}
    earlier = aliased(Result)
    nearest = (
        select(earlier.id)
        .where(
            earlier.series_id == Result.series_id,
            earlier.branch == branch,
            earlier.committed_at < commit.committed_at,
        )
        .order_by(earlier.committed_at.desc(), earlier.id.desc())
        .limit(1)
        .correlate(Result)
        .scalar_subquery()
    )
    pairs = session.execute(
        select(Result.id, nearest).where(Result.id.in_([r.id for r in results]))
    ).all()
    wanted = {rid: bid for rid, bid in pairs if bid is not None}
    if not wanted:
        return {}
    rows = session.execute(
        select(Result, Commit.sha, Run.run_uuid)
        .join(Commit, Commit.id == Result.commit_id)
        .join(Run, Run.id == Result.run_id)
        .where(Result.id.in_(set(wanted.values())))
    ).all()
    by_id = {r.id: (r, sha, uuid) for r, sha, uuid in rows}
    return {rid: by_id[bid] for rid, bid in wanted.items()}


def commit_metrics(
    session: Session, commit: Commit, repository: str, branch: str | None
) -> m.CommitMetrics:
    runs = _latest_runs(session, commit, branch)
    branch = runs[0].branch if runs else branch
    run_by_id = {r.id: r for r in runs}
    workloads = list(
        session.scalars(
            select(RunWorkload).where(RunWorkload.run_id.in_(run_by_id)).order_by(RunWorkload.id)
        )
    )
    wl_ids = [w.id for w in workloads]
    result_rows = session.execute(
        select(Result, Series)
        .join(Series, Series.id == Result.series_id)
        .where(Result.run_id.in_(run_by_id))
    ).all()
    baselines = _baselines(session, [r for r, _ in result_rows], branch or "", commit)
    metrics_by_wl: dict[int, list[tuple[str, m.MetricPublic]]] = defaultdict(list)
    for result, series in result_rows:
        base = baselines.get(result.id)
        metrics_by_wl[result.run_workload_id].append(
            (
                series.kernel,
                m.MetricPublic(
                    series_id=series.id,
                    metric=series.metric,
                    unit=series.unit,
                    method=result.method,
                    sm_clock_mhz=result.sm_clock_mhz,
                    statistics=statistics(result),
                    baseline=m.Baseline(
                        commit=base[1],
                        run_id=base[2],
                        median=base[0].median,
                        committed_at=base[0].committed_at,
                    )
                    if base
                    else None,
                    change=(result.median - base[0].median) / base[0].median if base else None,
                ),
            )
        )
    correctness = {
        c.run_workload_id: c
        for c in session.scalars(
            select(CorrectnessOutcome).where(CorrectnessOutcome.run_workload_id.in_(wl_ids))
        )
    }
    ncu: dict[int, dict[str, dict[str, m.NcuValue]]] = defaultdict(lambda: defaultdict(dict))
    for row in session.scalars(select(NcuMetric).where(NcuMetric.run_workload_id.in_(wl_ids))):
        ncu[row.run_workload_id][row.kernel][row.name] = m.NcuValue(value=row.value, unit=row.unit)
    findings: dict[int, dict[str, list[m.NcuFindingPublic]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for f in session.scalars(select(NcuFinding).where(NcuFinding.run_workload_id.in_(wl_ids))):
        findings[f.run_workload_id][f.kernel].append(
            m.NcuFindingPublic(
                rule=f.rule,
                type=f.type,
                description=f.description,
                estimated_speedup=f.estimated_speedup,
                speedup_type=f.speedup_type,
            )
        )
    timeline: dict[int, list[m.TimelineKernel]] = defaultdict(list)
    for t in session.scalars(
        select(TimelineEntry)
        .where(TimelineEntry.run_workload_id.in_(wl_ids))
        .order_by(TimelineEntry.total_ns.desc())
    ):
        timeline[t.run_workload_id].append(
            m.TimelineKernel(kernel=t.kernel, calls=t.calls, total_ns=t.total_ns, share=t.share)
        )
    builds: dict[tuple[int, str], m.BuildPublic] = {
        (b.run_id, b.kernel): m.BuildPublic(
            registers=b.registers,
            shared_bytes=b.shared_bytes,
            spill_stores_bytes=b.spill_stores_bytes,
            spill_loads_bytes=b.spill_loads_bytes,
            compile_seconds=b.compile_seconds,
            arch=b.arch,
        )
        for b in session.scalars(select(BuildResource).where(BuildResource.run_id.in_(run_by_id)))
    }
    out = []
    for w in workloads:
        out.append(
            _workload_public(
                w,
                run_by_id[w.run_id],
                metrics_by_wl[w.id],
                ncu[w.id],
                findings[w.id],
                builds,
                correctness.get(w.id),
                timeline.get(w.id),
            )
        )
    return m.CommitMetrics(
        commit=commit_public(commit, repository),
        branch=branch,
        runs=[
            m.RunBrief(
                run_id=r.run_uuid,
                suite=r.suite,
                branch=r.branch,
                status=r.status,
                build_status=r.build_status,
                fingerprint=r.fingerprint,
                gpu_name=r.gpu_name,
                finished_at=r.finished_at,
            )
            for r in runs
        ],
        workloads=out,
    )


def _workload_public(
    w: RunWorkload,
    run: Run,
    metrics: list[tuple[str, m.MetricPublic]],
    ncu: dict[str, dict[str, m.NcuValue]],
    findings: dict[str, list[m.NcuFindingPublic]],
    builds: dict[tuple[int, str], m.BuildPublic],
    correctness: CorrectnessOutcome | None,
    timeline: list[m.TimelineKernel] | None,
) -> m.WorkloadPublic:
    names: list[str] = []
    for name in [*(k for k, _ in metrics), *w.kernels, *ncu, *findings]:
        if name not in names:
            names.append(name)
    kernels = [
        m.KernelPublic(
            kernel=name,
            metrics=[mp for k, mp in metrics if k == name],
            ncu_metrics=dict(ncu.get(name, {})),
            ncu_findings=list(findings.get(name, [])),
            build=builds.get((run.id, name)),
        )
        for name in names
    ]
    corr: Any = None
    if correctness is not None:
        corr = m.CorrectnessPublic(
            passed=correctness.passed,
            error_norm=correctness.error_norm,
            tolerance=correctness.tolerance,
            norm=correctness.norm,
            precision=correctness.precision,
            unwritten=correctness.unwritten,
        )
    return m.WorkloadPublic(
        workload=w.name,
        params=w.params,
        run_id=run.run_uuid,
        fingerprint=run.fingerprint,
        status=w.status,
        error=w.error,
        flops=w.flops,
        bytes=w.bytes_moved,
        correctness=corr,
        timeline=m.TimelinePublic(
            source=w.timeline_source, note=w.timeline_note, kernels=timeline or []
        )
        if w.timeline_source
        else None,
        ncu_status=w.ncu_status,
        ncu_note=w.ncu_note,
        kernels=kernels,
    )

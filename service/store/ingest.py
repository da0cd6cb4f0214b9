"""Store a validated result document in one transaction."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.analysis.evaluate import evaluate_run
from service.analysis.stats import pack_samples, summarize
from service.core.units import to_microseconds_factor
from service.models import (
    BuildResource,
    Commit,
    CorrectnessOutcome,
    NcuFinding,
    NcuMetric,
    Repository,
    Result,
    Run,
    Runner,
    RunWorkload,
    Series,
    TimelineEntry,
)
from service.models.base import utcnow
from service.schemas.document import RunDocument, TimingIn, WorkloadIn, params_key
from service.store.upsert import get_or_create


class DocumentConflict(Exception):
    """The run id is stored already, with different contents."""


class SummaryMismatch(ValueError):
    """The runner's own summary statistics disagree with its samples."""


@dataclass(frozen=True)
class IngestOutcome:
    run_id: str
    stored: bool
    results: int


def document_digest(raw: Any) -> str:
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def series_identity(
    repository_id: int, suite: str, workload: WorkloadIn, timing: TimingIn, fingerprint: str
) -> str:
    parts = [
        str(repository_id),
        suite,
        workload.name,
        params_key(workload.params),
        timing.kernel,
        timing.metric,
        fingerprint,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _check_runner_summary(where: str, timing: TimingIn, summary: Any, factor: float) -> None:
    for field in ("n", "median", "q1", "q3", "min", "max", "mean"):
        claimed = getattr(timing, field)
        if claimed is None:
            continue
        actual = getattr(summary, field) / (1 if field == "n" else factor)
        if not math.isclose(claimed, actual, rel_tol=1e-6, abs_tol=1e-12):
            raise SummaryMismatch(
                f"{where}.timing.{field} is {claimed} but the samples give {actual:.9g}"
            )


def ingest(
    factory: sessionmaker[Session],
    doc: RunDocument,
    raw: Any,
    within: Callable[[Session], Callable[[Session], None]] | None = None,
) -> IngestOutcome:
    """Store `doc`; a second post of the same run id stores nothing and says so.

    `within`, if given, runs first inside the storing transaction (to check a job's lease) and
    returns what to run after the rows are written (to close the job): all or nothing.
    """
    digest = document_digest(raw)
    existing = _existing(factory, doc.run_id, digest)
    if existing is not None:
        return existing
    try:
        with factory() as session, session.begin():
            after = within(session) if within else None
            count = _store(session, doc, digest)
            if after:
                after(session)
    except IntegrityError:
        # Another request stored the same run id between our check and our insert.
        existing = _existing(factory, doc.run_id, digest)
        if existing is None:
            raise
        return existing
    return IngestOutcome(doc.run_id, stored=True, results=count)


def _existing(factory: sessionmaker[Session], run_uuid: str, digest: str) -> IngestOutcome | None:
    with factory() as session:
        run = session.scalars(select(Run).where(Run.run_uuid == run_uuid)).one_or_none()
        if run is None:
            return None
        if run.document_sha256 != digest:
            raise DocumentConflict(
                f"run {run_uuid} is already stored with different contents; "
                "a new measurement needs a new run_id"
            )
        count = len(session.scalars(select(Result.id).where(Result.run_id == run.id)).all())
        return IngestOutcome(run_uuid, stored=False, results=count)


def _store(session: Session, doc: RunDocument, digest: str) -> int:
    repo = get_or_create(
        session,
        Repository,
        {"name": doc.repository.name},
        clone_url=doc.repository.url,
        created_at=utcnow(),
    )
    c = doc.commit
    commit = get_or_create(
        session,
        Commit,
        {"repository_id": repo.id, "sha": c.sha},
        parents=c.parents,
        author_name=c.author_name,
        author_email=c.author_email,
        message=c.message,
        committed_at=c.committed_at,
        ancestors=c.ancestors,
    )
    if c.ancestors and not commit.ancestors:
        commit.ancestors = c.ancestors
    runner_id = None
    if doc.runner is not None:
        runner = get_or_create(
            session,
            Runner,
            {"name": doc.runner.name},
            host=doc.runner.host,
            labels=doc.runner.labels,
            created_at=utcnow(),
        )
        runner.last_seen_at = utcnow()
        runner_id = runner.id
    env = doc.environment
    run = Run(
        run_uuid=doc.run_id,
        document_sha256=digest,
        repository_id=repo.id,
        commit_id=commit.id,
        runner_id=runner_id,
        job_id=doc.job_id,
        suite=doc.suite,
        branch=doc.branch,
        status=doc.status,
        fingerprint=env.fingerprint,
        gpu_name=env.gpu.name,
        environment=env.model_dump(mode="json"),
        build_status=doc.build.status,
        build_seconds=doc.build.seconds,
        build_log_tail=doc.build.log_tail,
        log_tail=doc.log_tail,
        started_at=doc.started_at,
        finished_at=doc.finished_at,
    )
    session.add(run)
    session.flush()
    if doc.build.kernels:
        session.execute(
            insert(BuildResource), [{"run_id": run.id, **k.model_dump()} for k in doc.build.kernels]
        )
    results = 0
    for index, workload in enumerate(doc.workloads):
        results += _store_workload(session, doc, run, repo.id, commit, index, workload)
    session.flush()
    evaluate_run(session, run)
    return results


def _store_workload(
    session: Session,
    doc: RunDocument,
    run: Run,
    repository_id: int,
    commit: Commit,
    index: int,
    w: WorkloadIn,
) -> int:
    rw = RunWorkload(
        run_id=run.id,
        name=w.name,
        params=w.params,
        params_key=params_key(w.params),
        kernels=w.kernels,
        status=w.status,
        error=w.error,
        flops=w.flops,
        bytes_moved=w.bytes,
        timeline_source=w.timeline.source if w.timeline else None,
        timeline_note=w.timeline.reason if w.timeline else "",
        ncu_status=w.ncu.status if w.ncu else None,
        ncu_note=w.ncu.reason if w.ncu else "",
    )
    session.add(rw)
    session.flush()
    if w.correctness is not None:
        session.add(CorrectnessOutcome(run_workload_id=rw.id, **w.correctness.model_dump()))
    if w.timeline and w.timeline.kernels:
        session.execute(
            insert(TimelineEntry),
            [{"run_workload_id": rw.id, **k.model_dump()} for k in w.timeline.kernels],
        )
    if w.ncu and w.ncu.kernels:
        metrics = [
            {
                "run_workload_id": rw.id,
                "kernel": k.kernel,
                "name": name,
                "value": v.value,
                "unit": v.unit,
            }
            for k in w.ncu.kernels
            for name, v in k.metrics.items()
        ]
        findings = [
            {"run_workload_id": rw.id, "kernel": k.kernel, **f.model_dump()}
            for k in w.ncu.kernels
            for f in k.findings
        ]
        if metrics:
            session.execute(insert(NcuMetric), metrics)
        if findings:
            session.execute(insert(NcuFinding), findings)
    if w.timing is None:
        return 0
    _store_timing(session, doc, run, repository_id, commit, index, w, rw)
    return 1


def _store_timing(
    session: Session,
    doc: RunDocument,
    run: Run,
    repository_id: int,
    commit: Commit,
    index: int,
    w: WorkloadIn,
    rw: RunWorkload,
) -> None:
    timing = w.timing
    assert timing is not None
    # Every duration series is kept in microseconds, whatever unit the runner wrote.
    factor = to_microseconds_factor(timing.unit)
    samples = np.concatenate([np.asarray(p.samples, dtype=np.float64) for p in timing.processes])
    samples *= factor
    summary = summarize(samples)
    _check_runner_summary(f"workloads[{index}]", timing, summary, factor)
    identity = series_identity(repository_id, doc.suite, w, timing, doc.environment.fingerprint)
    series = get_or_create(
        session,
        Series,
        {"identity": identity},
        repository_id=repository_id,
        suite=doc.suite,
        workload=w.name,
        params=w.params,
        params_key=params_key(w.params),
        kernel=timing.kernel,
        metric=timing.metric,
        unit="us",
        fingerprint=doc.environment.fingerprint,
        created_at=utcnow(),
    )
    clocks = [p.sm_clock_mhz for p in timing.processes if p.sm_clock_mhz is not None]
    session.add(
        Result(
            run_id=run.id,
            run_workload_id=rw.id,
            series_id=series.id,
            commit_id=commit.id,
            branch=doc.branch,
            committed_at=commit.committed_at,
            n=summary.n,
            median=summary.median,
            q1=summary.q1,
            q3=summary.q3,
            min=summary.min,
            max=summary.max,
            mean=summary.mean,
            stdev=summary.stdev,
            samples=pack_samples(samples),
            process_counts=[len(p.samples) for p in timing.processes],
            method=timing.method,
            sm_clock_mhz=float(np.median(clocks)) if clocks else None,
        )
    )

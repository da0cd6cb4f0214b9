"""A document's workloads as rows: a handful of multi-row INSERTs per document, not per workload.

Ingest throughput is bounded by statement round trips; every table gets one executemany (or one
INSERT ... RETURNING for the ids the other rows point at).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import JSON, TypeDecorator, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.analysis.stats import Summary, pack_samples, summarize
from service.core.units import to_microseconds_factor
from service.models import (
    Commit,
    CorrectnessOutcome,
    NcuFinding,
    NcuMetric,
    Result,
    Run,
    RunWorkload,
    Series,
    TimelineEntry,
)
from service.models.base import utcnow
from service.schemas.document import RunDocument, TimingIn, WorkloadIn, params_key


class SummaryMismatch(ValueError):
    """The runner's own summary statistics disagree with its samples."""


@dataclass(frozen=True)
class Timed:
    """A workload's timing, converted and summarized before anything is written."""

    index: int
    samples: np.ndarray
    summary: Summary
    identity: str


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


def _check_runner_summary(where: str, timing: TimingIn, summary: Summary, factor: float) -> None:
    for field in ("n", "median", "q1", "q3", "min", "max", "mean"):
        claimed = getattr(timing, field)
        if claimed is None:
            continue
        actual = getattr(summary, field) / (1 if field == "n" else factor)
        if not math.isclose(claimed, actual, rel_tol=1e-6, abs_tol=1e-12):
            raise SummaryMismatch(
                f"{where}.timing.{field} is {claimed} but the samples give {actual:.9g}"
            )


def summarize_timings(doc: RunDocument, repository_id: int) -> list[Timed]:
    """Every timing in microseconds with its summary; a lying summary fails the whole document."""
    out = []
    for index, w in enumerate(doc.workloads):
        if w.timing is None:
            continue
        factor = to_microseconds_factor(w.timing.unit)
        samples = (
            np.concatenate([np.asarray(p.samples, dtype=np.float64) for p in w.timing.processes])
            * factor
        )
        summary = summarize(samples)
        _check_runner_summary(f"workloads[{index}]", w.timing, summary, factor)
        identity = series_identity(
            repository_id, doc.suite, w, w.timing, doc.environment.fingerprint
        )
        out.append(Timed(index, samples, summary, identity))
    return out


def _series_ids(
    session: Session, doc: RunDocument, repository_id: int, timed: list[Timed]
) -> dict[str, int]:
    """Ids of the documents' series, creating the new ones (safe against concurrent ingest)."""
    wanted = {t.identity for t in timed}
    if not wanted:
        return {}
    known = dict(
        session.execute(select(Series.identity, Series.id).where(Series.identity.in_(wanted))).all()
    )
    missing = [t for t in timed if t.identity not in known]
    if missing:
        insert_ = (
            postgresql.insert
            if session.get_bind().dialect.name == "postgresql"
            else (sqlite.insert)
        )
        rows = []
        for t in missing:
            w = doc.workloads[t.index]
            assert w.timing is not None
            rows.append(
                {
                    "identity": t.identity,
                    "repository_id": repository_id,
                    "suite": doc.suite,
                    "workload": w.name,
                    "params": w.params,
                    "params_key": params_key(w.params),
                    "kernel": w.timing.kernel,
                    "metric": w.timing.metric,
                    "unit": "us",
                    "fingerprint": doc.environment.fingerprint,
                    "created_at": utcnow(),
                }
            )
        session.execute(insert_(Series).values(rows).on_conflict_do_nothing())
        known = dict(
            session.execute(
                select(Series.identity, Series.id).where(Series.identity.in_(wanted))
            ).all()
        )
    return known


def store_workloads(
    session: Session,
    doc: RunDocument,
    run: Run,
    repository_id: int,
    commit: Commit,
    timed: list[Timed],
) -> int:
    if not doc.workloads:
        return 0
    ids = list(
        session.scalars(
            insert(RunWorkload).returning(RunWorkload.id, sort_by_parameter_order=True),
            [
                {
                    "run_id": run.id,
                    "name": w.name,
                    "params": w.params,
                    "params_key": params_key(w.params),
                    "kernels": w.kernels,
                    "status": w.status,
                    "error": w.error,
                    "flops": w.flops,
                    "bytes_moved": w.bytes,
                    "timeline_source": w.timeline.source if w.timeline else None,
                    "timeline_note": w.timeline.reason if w.timeline else "",
                    "ncu_status": w.ncu.status if w.ncu else None,
                    "ncu_note": w.ncu.reason if w.ncu else "",
                }
                for w in doc.workloads
            ],
        )
    )
    pairs = list(zip(ids, doc.workloads, strict=True))
    _many(
        session,
        CorrectnessOutcome,
        [{"run_workload_id": i, **w.correctness.model_dump()} for i, w in pairs if w.correctness],
    )
    _many(
        session,
        TimelineEntry,
        [
            {"run_workload_id": i, **k.model_dump()}
            for i, w in pairs
            if w.timeline
            for k in w.timeline.kernels
        ],
    )
    _many(
        session,
        NcuMetric,
        [
            {
                "run_workload_id": i,
                "kernel": k.kernel,
                "name": name,
                "value": v.value,
                "unit": v.unit,
            }
            for i, w in pairs
            if w.ncu
            for k in w.ncu.kernels
            for name, v in k.metrics.items()
        ],
    )
    _many(
        session,
        NcuFinding,
        [
            {"run_workload_id": i, "kernel": k.kernel, **f.model_dump()}
            for i, w in pairs
            if w.ncu
            for k in w.ncu.kernels
            for f in k.findings
        ],
    )
    series = _series_ids(session, doc, repository_id, timed)
    _many(
        session,
        Result,
        [_result_row(doc, run, commit, ids[t.index], series[t.identity], t) for t in timed],
    )
    return len(timed)


def _result_row(
    doc: RunDocument, run: Run, commit: Commit, run_workload_id: int, series_id: int, t: Timed
) -> dict[str, Any]:
    timing = doc.workloads[t.index].timing
    assert timing is not None
    clocks = [p.sm_clock_mhz for p in timing.processes if p.sm_clock_mhz is not None]
    s = t.summary
    return {
        "run_id": run.id,
        "run_workload_id": run_workload_id,
        "series_id": series_id,
        "commit_id": commit.id,
        "branch": doc.branch,
        "committed_at": commit.committed_at,
        "n": s.n,
        "median": s.median,
        "q1": s.q1,
        "q3": s.q3,
        "min": s.min,
        "max": s.max,
        "mean": s.mean,
        "stdev": s.stdev,
        "samples": pack_samples(t.samples),
        "process_counts": [len(p.samples) for p in timing.processes],
        "method": timing.method,
        "sm_clock_mhz": float(np.median(clocks)) if clocks else None,
    }


def _many(session: Session, model: type, rows: list[dict[str, Any]]) -> None:
    """Insert many rows: straight through the driver where the rows are plain (COPY on
    PostgreSQL, executemany on SQLite), else a Core executemany.

    A document brings a thousand-odd rows (ncu metrics above all). psycopg's executemany sends
    each as a statement of its own (~20 us a row) where COPY streams them (~2 us), and
    SQLAlchemy's per-row parameter processing costs more than SQLite's insert; the ORM's bulk
    path would cost more than either."""
    if not rows:
        return
    table = model.__table__  # type: ignore[attr-defined]
    connection = session.connection()
    if not _copyable(table, rows[0]):
        session.execute(table.insert(), rows)
        return
    names = list(rows[0])
    columns = ", ".join(f'"{n}"' for n in names)
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    values = ([row[n] for n in names] for row in rows)
    if connection.dialect.name == "postgresql":
        with cursor.copy(f'COPY "{table.name}" ({columns}) FROM STDIN') as copy:
            for row in values:
                copy.write_row(row)
    else:
        marks = ", ".join("?" * len(names))
        cursor.executemany(f'INSERT INTO "{table.name}" ({columns}) VALUES ({marks})', values)
        cursor.close()


def _copyable(table: Any, row: dict[str, Any]) -> bool:
    """Rows that name every column but the key, none of them JSON or of a decorated type: what
    COPY takes as is, without the defaults and type processing of an INSERT through SQLAlchemy."""
    columns = {c.name: c for c in table.columns if not c.primary_key}
    return set(row) == set(columns) and not any(
        isinstance(c.type, JSON | TypeDecorator) or isinstance(row[name], dict | list)
        for name, c in columns.items()
    )

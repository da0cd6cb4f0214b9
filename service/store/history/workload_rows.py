"""A document's workloads as rows: one bulk write per table per document, not per workload.

Ingest throughput is bounded by statement round trips and per-row overhead: every table gets one
COPY (PostgreSQL) or executemany (SQLite), with ids drawn beforehand for the rows others point at.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Row, func, select, text
from sqlalchemy.orm import Session

from service.core.errors import InvalidDocument
from service.core.sql import dialect_insert
from service.core.units import to_microseconds_factor
from service.models import (
    CorrectnessOutcome,
    NcuKernel,
    Result,
    RunWorkload,
    Series,
    TimelineEntry,
)
from service.models.base import utcnow
from service.schemas.document import RunDocument, TimingIn, WorkloadIn, params_key
from service.schemas.metrics import Statistics
from service.store.history.samples import pack_samples, summarize


class SummaryMismatch(InvalidDocument):
    """The runner's own summary statistics disagree with its samples."""


@dataclass(frozen=True)
class Timed:
    """A workload's timing, converted and summarized before anything is written."""

    index: int
    samples: np.ndarray
    summary: Statistics
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
        timing.method,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _check_runner_summary(where: str, timing: TimingIn, summary: Statistics, factor: float) -> None:
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
        with np.errstate(over="ignore"):
            samples = (
                np.concatenate(
                    [np.asarray(p.samples, dtype=np.float64) for p in w.timing.processes]
                )
                * factor
            )
        if not np.isfinite(samples).all():
            raise InvalidDocument(
                f"workloads[{index}].timing.processes: a sample in {w.timing.unit} overflows "
                "to infinity in microseconds"
            )
        if (samples <= 0).any():  # 5e-324 ns is 0 us: it would be stored as what it is not
            raise InvalidDocument(
                f"workloads[{index}].timing.processes: a sample in {w.timing.unit} underflows "
                "to zero in microseconds"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, named
            summary = summarize(samples)
        if not all(math.isfinite(v) for v in vars(summary).values()):
            raise InvalidDocument(
                f"workloads[{index}].timing: the samples' statistics overflow in microseconds "
                f"(unit {w.timing.unit}): durations this large are no measurement"
            )
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
                    "method": w.timing.method,
                    "fingerprint": doc.environment.fingerprint,
                    "created_at": utcnow(),
                }
            )
        session.execute(dialect_insert(session)(Series).values(rows).on_conflict_do_nothing())
        known = dict(
            session.execute(
                select(Series.identity, Series.id).where(Series.identity.in_(wanted))
            ).all()
        )
    return known


# Whose prepare times a workload's measure takes, first found first: the suite's timing processes
# compare run against run; a doubtful launch's pairs against their base, within the run.
PROCESS_KINDS = ("suite", "paired", "short", "alone")


def measures_of(w: WorkloadIn, paired_base: WorkloadIn | None = None) -> dict[str, Any]:
    """The workload's measures beside its duration (service.analysis.measures): the median
    prepare time of its processes of the suite's kind where it had any, else of those it had
    (`prepare_process` says which; with the base's in the same pairs, `paired_base`, where
    those were pairs), the most memory any of them saw, the error of its check."""
    processes = w.timing.processes if w.timing is not None else []
    out: dict[str, Any] = {}
    timed = [p for p in processes if p.prepare_seconds is not None]
    kinds = {p.process or "suite" for p in timed}
    kind = next((k for k in PROCESS_KINDS if k in kinds), "suite")
    if prepared := [p.prepare_seconds for p in timed if (p.process or "suite") == kind]:
        out["prepare_seconds"] = float(statistics.median(prepared))
        if kind != "suite":
            out["prepare_process"] = kind
        base = paired_base.timing.processes if paired_base and paired_base.timing else []
        if kind == "paired" and (
            alike := [p.prepare_seconds for p in base
                      if p.prepare_seconds is not None and p.process == "paired"]
        ):  # fmt: skip
            out["prepare_paired_base"] = float(statistics.median(alike))
    if peaks := [p.peak_memory_bytes for p in processes if p.peak_memory_bytes is not None]:
        out["peak_memory_bytes"] = float(max(peaks))
    error = w.correctness.error_norm if w.correctness is not None else None
    if error is not None and w.timing is not None:  # a workload that ran: a failed one is broken
        out["numeric_error"] = float(error)
    return out


def store_workloads(
    session: Session,
    doc: RunDocument,
    run_id: int,
    repository_id: int,
    commit: Row[Any],
    timed: list[Timed],
    workload_ids: list[int] | None = None,
) -> int:
    """Rows for the document's workloads; `commit` has the stored commit's id and time,
    `workload_ids` the ids drawn for them beforehand (drawn_ids; always on PostgreSQL)."""
    if not doc.workloads:
        return 0
    based = doc.paired_base.workloads if doc.paired_base is not None else []
    paired = {(b.name, params_key(b.params)): b for b in based}
    ids = (
        workload_ids
        if workload_ids is not None
        else _ids_after_largest(session, RunWorkload, len(doc.workloads))
    )
    many(
        session,
        RunWorkload,
        [
            {
                "id": i,
                "run_id": run_id,
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
                "choices": w.choices,
                "compiled": [c.model_dump(exclude_defaults=True) for c in w.compiled],
                "measures": measures_of(w, paired.get((w.name, params_key(w.params)))),
            }
            for i, w in zip(ids, doc.workloads, strict=True)
        ],
    )
    pairs = list(zip(ids, doc.workloads, strict=True))
    many(
        session,
        CorrectnessOutcome,
        [{"run_workload_id": i, **w.correctness.model_dump()} for i, w in pairs if w.correctness],
    )
    many(
        session,
        TimelineEntry,
        [
            {"run_workload_id": i, **k.model_dump()}
            for i, w in pairs
            if w.timeline
            for k in w.timeline.kernels
        ],
    )
    many(
        session,
        NcuKernel,
        [
            {
                "run_workload_id": i,
                "kernel": k.kernel,
                "metrics": {n: _stored_metric(v) for n, v in k.metrics.items()},
                "findings": [f.model_dump() for f in k.findings],
                "determinants": k.determinants,
                "profiled_at": k.profiled_at,
            }
            for i, w in pairs
            if w.ncu
            for k in w.ncu.kernels
        ],
    )
    series = _series_ids(session, doc, repository_id, timed)
    many(
        session,
        Result,
        [_result_row(doc, run_id, commit, ids[t.index], series[t.identity], t) for t in timed],
    )
    return len(timed)


def _stored_metric(v: Any) -> dict[str, Any]:
    """An ncu metric as stored: value, unit and, where the runner named it, its label."""
    stored = {"value": v.value, "unit": v.unit}
    if v.label:
        stored["label"] = v.label
    return stored


def drawn_ids(session: Session, model: type, count: int) -> Any:
    """On PostgreSQL, an expression that draws `count` ids of `model` from its sequence, for the
    RETURNING of a statement sent anyway (one round trip less per document); else None."""
    if count == 0 or session.get_bind().dialect.name != "postgresql":
        return None
    table = model.__table__  # type: ignore[attr-defined]
    sequence = func.pg_get_serial_sequence(table.name, "id")
    return (
        select(func.array_agg(func.nextval(sequence)))
        .select_from(func.generate_series(1, count))
        .scalar_subquery()
    )


def _ids_after_largest(session: Session, model: type, count: int) -> list[int]:
    """SQLite's primary keys for `count` new rows, so that the rows can be written without
    RETURNING (which takes SQLAlchemy's slow row-by-row path) and still be pointed at: SQLite has
    no sequence, so they follow the table's largest, which is safe because this transaction
    already holds SQLite's one write lock (the run row is written first). PostgreSQL's come from
    the sequence, drawn with the run row (drawn_ids)."""
    assert session.get_bind().dialect.name == "sqlite", "PostgreSQL's ids come from drawn_ids"
    table = model.__table__  # type: ignore[attr-defined]
    top = session.scalar(text(f'SELECT coalesce(max(id), 0) FROM "{table.name}"')) or 0
    return list(range(top + 1, top + 1 + count))


def _result_row(
    doc: RunDocument, run_id: int, commit: Row[Any], run_workload_id: int, series_id: int, t: Timed
) -> dict[str, Any]:
    timing = doc.workloads[t.index].timing
    assert timing is not None
    clocks = [p.sm_clock_mhz for p in timing.processes if p.sm_clock_mhz is not None]
    s = t.summary
    return {
        "run_id": run_id,
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
        "sm_clock_mhz": float(statistics.median(clocks)) if clocks else None,
    }


def many(session: Session, model: type, rows: list[dict[str, Any]]) -> None:
    """Insert many rows straight through the driver: COPY on PostgreSQL, executemany on SQLite.

    A document brings hundreds of rows. psycopg's executemany sends each as a statement of its
    own (~20 us a row) where COPY streams them (~2 us), and SQLAlchemy's executemany spends more
    on per-row bookkeeping than SQLite spends inserting. The columns' own bind processing (JSON,
    aware datetimes) is kept: each value goes through its type's processor. Rows that leave a
    column to its default take SQLAlchemy's path."""
    if not rows:
        return
    table = model.__table__  # type: ignore[attr-defined]
    connection = session.connection()
    dialect = connection.dialect
    names = list(rows[0])
    columns = {c.name for c in table.columns if not c.primary_key} | ({"id"} & set(names))
    if set(names) != columns:
        session.execute(table.insert(), rows)
        return
    processors = [(i, p) for i, p in enumerate(_processors(table, dialect, names)) if p]
    values = [[row[n] for n in names] for row in rows]
    for row_values in values:
        for i, process in processors:
            row_values[i] = process(row_values[i])
    quoted = ", ".join(f'"{n}"' for n in names)
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    if dialect.name == "postgresql":
        with cursor.copy(f'COPY "{table.name}" ({quoted}) FROM STDIN') as copy:
            for row_values in values:
                copy.write_row(row_values)
    else:
        marks = ", ".join("?" * len(names))
        cursor.executemany(f'INSERT INTO "{table.name}" ({quoted}) VALUES ({marks})', values)
        cursor.close()


_PROCESSORS: dict[tuple[str, str, tuple[str, ...]], list[Any]] = {}


def _processors(table: Any, dialect: Any, names: list[str]) -> list[Any]:
    """Each named column's bind processor for this dialect (None where values pass as they are)."""
    key = (table.name, dialect.name, tuple(names))
    if key not in _PROCESSORS:
        _PROCESSORS[key] = [
            table.columns[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names
        ]
    return _PROCESSORS[key]

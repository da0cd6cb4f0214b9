"""The rows behind one commit's metrics (service.evaluation.reads.commit_metrics), each statement
bound to the commit's own runs so that it costs the same however long the history behind them.

Each read is shaped so that PostgreSQL's plan does not hang on its statistics. Where they are
missing or stale (a history stored through the API that autovacuum has not analysed since: off
on this machine, behind a fast-growing history elsewhere) the planner assumes 200 distinct
values a column; the joins of a run's workloads to their ncu captures and work verdicts became
hash joins over the whole tables, and results joined to their series walked each series' whole
history: the read grew from 83 ms at 200 commits to 420 at 2,000 (benchmarks/service_flat.py).
Single-table reads by run and, for what hangs off each workload, a nested loop over the workloads
(_each) keep to the commit's rows whatever the planner knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, Text, cast, select, true
from sqlalchemy.orm import Session

from service.core.sql import among
from service.models import (
    BuildResource,
    ChangePoint,
    Commit,
    CorrectnessOutcome,
    MeasureVerdict,
    NcuKernel,
    Result,
    RunWorkload,
    Series,
    TimelineEntry,
    Verdict,
    WorkVerdict,
)

# Plain columns throughout: a commit of a 200-workload suite has over a thousand rows to show,
# and ORM objects (identity map, JSON columns nobody reads) would cost more than the queries.
_WORKLOAD = [
    RunWorkload.id, RunWorkload.run_id, RunWorkload.name, RunWorkload.params,
    RunWorkload.kernels, RunWorkload.status, RunWorkload.error, RunWorkload.flops,
    RunWorkload.bytes_moved, RunWorkload.timeline_source, RunWorkload.timeline_note,
    RunWorkload.ncu_status, RunWorkload.ncu_note, RunWorkload.compiled,
]  # fmt: skip
_CORRECTNESS = [
    CorrectnessOutcome.passed, CorrectnessOutcome.error_norm, CorrectnessOutcome.tolerance,
    CorrectnessOutcome.norm, CorrectnessOutcome.precision, CorrectnessOutcome.unwritten,
]  # fmt: skip
_RESULT = [
    Result.id, Result.run_workload_id, Result.series_id, Result.method, Result.sm_clock_mhz,
    Result.n, Result.median, Result.q1, Result.q3, Result.min, Result.max, Result.mean,
    Result.stdev,
]  # fmt: skip
_VERDICT = [
    Verdict.result_id, Verdict.series_id, Verdict.verdict, Verdict.change, Verdict.p_value,
    Verdict.q_value, Verdict.floor, Verdict.baseline_median, Verdict.baseline_results,
    Verdict.note, Verdict.segment_start_commit_id, Verdict.segment_kind, Verdict.segment_results,
    Verdict.segment_note, Verdict.baseline_commits, Verdict.redefined_from_series_id,
    Verdict.run_offset, Verdict.offset_controls,
]  # fmt: skip
# id and kernel, then the arguments of service.evaluation.reads.commit_metrics.work_public in order
_WORK = [
    WorkVerdict.id, WorkVerdict.kernel, WorkVerdict.counter, WorkVerdict.label,
    WorkVerdict.value, WorkVerdict.base_value, WorkVerdict.change, WorkVerdict.verdict,
    WorkVerdict.tolerance, WorkVerdict.pairs,
]  # fmt: skip
_BUILD = [
    BuildResource.run_id, BuildResource.kernel, BuildResource.registers,
    BuildResource.shared_bytes, BuildResource.spill_stores_bytes,
    BuildResource.spill_loads_bytes, BuildResource.compile_seconds, BuildResource.arch,
]  # fmt: skip


def _rows(session: Session, query: Any) -> list[Row[Any]]:
    """The rows of a select of columns, through the session's connection: the ORM's execution
    (for rows, not objects) cost 4 ms of a 200-workload commit's read, for nothing it uses."""
    return list(session.connection().execute(query).all())


def _postgres(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _each(owner: Any, columns: list[Any]) -> Any:
    """`columns` of the rows that `owner` ties to one workload, as a LATERAL subquery fenced by
    OFFSET 0 so that PostgreSQL cannot fold it back into a join: a nested loop over the runs'
    workloads, each one's rows by the owner's index. As a join (or `IN (subquery)`) it was a
    hash join over the owner's whole table whenever the statistics were missing, and, for the
    correctness outcomes, even with fresh ones (4 ms at 200 commits where lookups take 0.3)."""
    return select(*columns).where(owner == RunWorkload.id).offset(0).lateral()


def workloads(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """The runs' workloads in id order, each with its correctness outcome (at most one)."""
    if _postgres(session):
        outcome = _each(CorrectnessOutcome.run_workload_id, _CORRECTNESS)
        query = select(*_WORKLOAD, *outcome.c).outerjoin(outcome, true())
    else:
        query = select(*_WORKLOAD, *_CORRECTNESS).outerjoin(
            CorrectnessOutcome, CorrectnessOutcome.run_workload_id == RunWorkload.id
        )
    query = query.where(among(session, RunWorkload.run_id, run_ids)).order_by(RunWorkload.id)
    return _rows(session, query)


def results(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """The runs' results, each with its series' kernel, metric and unit. On PostgreSQL the
    series by a LATERAL lookup per result: as a join, a planner without statistics drove it
    from the series and read each one's results of the whole history by its index."""
    names = [Series.kernel, Series.metric, Series.unit]
    if _postgres(session):
        series = select(*names).where(Series.id == Result.series_id).offset(0).lateral()
        query = select(*_RESULT, *series.c).join(series, true())
    else:
        query = select(*_RESULT, *names).join(Series, Series.id == Result.series_id)
    return _rows(session, query.where(among(session, Result.run_id, run_ids)))


def verdicts(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    return _rows(session, select(*_VERDICT).where(among(session, Verdict.run_id, run_ids)))


def _per_workload(
    session: Session,
    run_ids: Sequence[int],
    owner: Any,
    columns: list[Any],
    order: Any = None,
    descending: bool = False,
) -> list[Row[Any]]:
    """(run_workload_id, *columns) of the rows that `owner` ties to the runs' workloads: on
    PostgreSQL workload by workload (_each); SQLite looks them up by the index either way."""
    if _postgres(session):
        inner = _each(owner, columns)
        query = (
            select(RunWorkload.id.label("run_workload_id"), *inner.c)
            .select_from(RunWorkload)
            .join(inner, true())
            .where(among(session, RunWorkload.run_id, run_ids))
        )
        key = inner.c[order.key] if order is not None else None
    else:
        mine = select(RunWorkload.id).where(among(session, RunWorkload.run_id, run_ids))
        query = select(owner.label("run_workload_id"), *columns).where(owner.in_(mine))
        key = order
    if key is not None:
        query = query.order_by(key.desc() if descending else key)
    return _rows(session, query)


def ncu_captures(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """(run_workload_id, kernel, metrics, findings) of the runs' ncu captures, the two JSON
    columns as their stored text: the caller passes them on whole, or parses what it keeps."""
    stored = [cast(NcuKernel.metrics, Text).label("metrics"),
              cast(NcuKernel.findings, Text).label("findings")]  # fmt: skip
    return _per_workload(session, run_ids, NcuKernel.run_workload_id, [NcuKernel.kernel, *stored])


def work_verdicts(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """The runs' work verdicts, in the order they were judged."""
    return _per_workload(session, run_ids, WorkVerdict.run_workload_id, _WORK, WorkVerdict.id)


def measure_verdicts(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """The runs' measure verdicts (prepare time, peak memory, numeric error), by measure."""
    columns = [MeasureVerdict.measure, MeasureVerdict.value, MeasureVerdict.base_value,
               MeasureVerdict.change, MeasureVerdict.verdict, MeasureVerdict.tolerance]  # fmt: skip
    owner = MeasureVerdict.run_workload_id
    return _per_workload(session, run_ids, owner, columns, MeasureVerdict.measure)


def timelines(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    """The runs' kernel timelines, the kernel that took longest first."""
    columns = [TimelineEntry.kernel, TimelineEntry.calls, TimelineEntry.total_ns,
               TimelineEntry.share]  # fmt: skip
    owner = TimelineEntry.run_workload_id
    return _per_workload(session, run_ids, owner, columns, TimelineEntry.total_ns, True)


def builds(session: Session, run_ids: Sequence[int]) -> list[Row[Any]]:
    return _rows(session, select(*_BUILD).where(among(session, BuildResource.run_id, run_ids)))


def change_points(
    session: Session, commit_id: int, branch: str, series_ids: set[int]
) -> list[Row[Any]]:
    """The branch's change points of these series whose first commit is this one."""
    columns = [ChangePoint.series_id, ChangePoint.before_median, ChangePoint.after_median,
               ChangePoint.change]  # fmt: skip
    return _rows(
        session,
        select(*columns).where(
            ChangePoint.commit_id == commit_id,
            ChangePoint.branch == branch,
            among(session, ChangePoint.series_id, series_ids),
        ),
    )


def commit_shas(session: Session, commit_ids: set[int]) -> dict[int, str]:
    if not commit_ids:
        return {}
    query = select(Commit.id, Commit.sha).where(among(session, Commit.id, commit_ids))
    return {cid: sha for cid, sha in _rows(session, query)}


def series_by_id(session: Session, series_ids: set[int]) -> dict[int, Series]:
    if not series_ids:
        return {}
    found = session.scalars(select(Series).where(among(session, Series.id, series_ids)))
    return {s.id: s for s in found}

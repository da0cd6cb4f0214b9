"""The workloads a run redefined in place: its new series paired with the series the previous
run measured and this one retired (the SQL around service.analysis.redefinition)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.redefinition import pairs
from service.evaluation.verdicts.notes import describe_workload
from service.models import Result, RunWorkload, Series


def _measured(session: Session, run_id: int, series_ids: Any = None) -> list[Any]:
    """(series, its workload row's kernels, FLOPs and bytes) of the run's results."""
    query = (
        select(Series, RunWorkload.kernels, RunWorkload.flops, RunWorkload.bytes_moved)
        .join(Result, Result.series_id == Series.id)
        .join(RunWorkload, RunWorkload.id == Result.run_workload_id)
        .where(Result.run_id == run_id)
    )
    if series_ids is not None:
        query = query.where(Series.id.in_(series_ids))
    return list(session.execute(query).all())


def _key(series: Series, kernels: list[str], flops: float | None, moved: float | None) -> Hashable:
    """What a redefinition keeps: the workload, its kernels and work, the series' metric,
    method and GPU (everything but the parameters)."""
    return (series.workload, tuple(sorted(kernels or ())), series.kernel, series.metric,
            series.method, series.fingerprint, flops, moved)  # fmt: skip


def redefined(
    session: Session, run_id: int, previous: int | None, started: set[int], measured: set[int]
) -> dict[int, Series]:
    """Per series the run started (`started`, no baseline along the branch), the series it
    redefines: measured by the previous run (`previous`), not by this one (`measured`), with
    no workload of its parameters in this run at all (a broken one is broken, not redefined)."""
    if previous is None or not started:
        return {}
    new = _measured(session, run_id, started)
    here = {
        (name, key)
        for name, key in session.execute(
            select(RunWorkload.name, RunWorkload.params_key).where(RunWorkload.run_id == run_id)
        )
    }
    old = [
        row
        for row in _measured(session, previous)
        if row[0].id not in measured and (row[0].workload, row[0].params_key) not in here
    ]
    matched = pairs(
        [(row[0].id, _key(*row)) for row in new], [(row[0].id, _key(*row)) for row in old]
    )
    retired = {row[0].id: row[0] for row in old}
    return {new_id: retired[old_id] for new_id, old_id in matched.items()}


def describe(old: Series, new: Series) -> str:
    """'reduce blocks=1056 → reduce blocks=132'."""
    return (
        f"{describe_workload(old.workload, old.params)} → "
        f"{describe_workload(new.workload, new.params)}"
    )

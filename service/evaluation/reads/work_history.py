"""The work counters of a workload's kernels along a branch: a series of their own per kernel
and counter, read beside the timing series they belong to."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.work import WORK_COUNTERS, WORK_LABELS
from service.models import Commit, NcuKernel, Result, Run, RunWorkload, Series, WorkVerdict
from service.schemas import metrics as m
from service.store.history.series import newest_results, series_public


def work_history(
    session: Session,
    series: Series,
    repository: str,
    branch: str,
    limit: int,
    kernel: str | None = None,
) -> m.WorkHistory:
    """Per kernel of the series' workload (or only `kernel`), the work counters of the runs of
    the series' last `limit` results on the branch, oldest first, with each one's verdict."""
    newest = newest_results(series.id, branch, limit)
    query = (
        select(
            Result.committed_at,
            Commit.sha,
            Run.run_uuid,
            NcuKernel.run_workload_id,
            NcuKernel.kernel,
            NcuKernel.metrics,
        )
        .join(newest, newest.c.id == Result.id)
        .join(Commit, Commit.id == Result.commit_id)
        .join(Run, Run.id == Result.run_id)
        .join(
            RunWorkload,
            (RunWorkload.run_id == Result.run_id)
            & (RunWorkload.name == series.workload)
            & (RunWorkload.params_key == series.params_key),
        )
        .join(NcuKernel, NcuKernel.run_workload_id == RunWorkload.id)
        .order_by(Result.committed_at, Result.id, NcuKernel.kernel)
    )
    if kernel is not None:
        query = query.where(NcuKernel.kernel == kernel)
    rows = session.execute(query).all()
    judged: dict[tuple[int, str], dict[str, Any]] = defaultdict(dict)
    for wv in session.scalars(
        select(WorkVerdict).where(
            WorkVerdict.run_workload_id.in_({r.run_workload_id for r in rows})
        )
    ):
        judged[(wv.run_workload_id, wv.kernel)][wv.counter] = {
            "verdict": wv.verdict,
            "change": wv.change,
        }
    kernels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    labels = dict(WORK_LABELS)  # the runner's own labels where its captures had them
    for r in rows:
        labels.update({c: r.metrics[c]["label"] for c in WORK_COUNTERS
                       if "label" in r.metrics.get(c, {})})  # fmt: skip
        values = {c: float(r.metrics[c]["value"]) for c in WORK_COUNTERS if c in r.metrics}
        if values:
            kernels[r.kernel].append({
                "commit": r.sha,
                "committed_at": r.committed_at,
                "run_id": r.run_uuid,
                "values": values,
                "verdicts": judged.get((r.run_workload_id, r.kernel), {}),
            })  # fmt: skip
    return m.WorkHistory.model_validate(
        {
            "series": series_public(series, repository).model_dump(),
            "branch": branch,
            "counters": labels,
            "kernels": [{"kernel": k, "points": p} for k, p in kernels.items()],
        }
    )

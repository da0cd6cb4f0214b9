"""Work verdicts of a run: each kernel's work counters against the previous run's (the SQL around
service.analysis.work)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.analysis.work import WORK_COUNTERS, verdicts
from service.models import NcuKernel, RunWorkload, WorkVerdict


def _captures(session: Session, run_id: int) -> dict[tuple[str, str, str], Any]:
    """(workload, params key, kernel) -> (run workload id, {counter: value}, {counter: label})."""
    rows = session.execute(
        select(
            RunWorkload.id,
            RunWorkload.name,
            RunWorkload.params_key,
            NcuKernel.kernel,
            NcuKernel.metrics,
        )
        .join(NcuKernel, NcuKernel.run_workload_id == RunWorkload.id)
        .where(RunWorkload.run_id == run_id)
    )
    return {
        (name, key, kernel): (
            wl_id,
            {c: float(metrics[c]["value"]) for c in WORK_COUNTERS if c in metrics},
            {c: metrics[c].get("label", "") for c in WORK_COUNTERS if c in metrics},
        )
        for wl_id, name, key, kernel, metrics in rows
    }


def judge_work(session: Session, run_id: int, previous_run_id: int | None) -> list[WorkVerdict]:
    """The run's work verdicts against `previous_run_id` (the previous run of the suite and
    fingerprint along the branch), replacing any it had."""
    mine = select(RunWorkload.id).where(RunWorkload.run_id == run_id)
    session.execute(delete(WorkVerdict).where(WorkVerdict.run_workload_id.in_(mine)))
    head = _captures(session, run_id)
    base = _captures(session, previous_run_id) if previous_run_id is not None and head else {}
    out = []
    for key, (wl_id, counters, labels) in head.items():
        before = base.get(key, (None, None))[1]
        for counter, base_value, value, verdict, change in verdicts(before, counters):
            out.append(
                WorkVerdict(
                    run_workload_id=wl_id,
                    kernel=key[2],
                    counter=counter,
                    label=labels[counter],
                    value=value,
                    base_value=base_value,
                    base_run_id=previous_run_id if base_value is not None else None,
                    change=change,
                    verdict=verdict,
                )
            )
    session.add_all(out)
    return out

"""Work verdicts of a run: each kernel's work counters against the previous run's, each judged
against its own noise over the runs before it on the line (the SQL around
service.analysis.work)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.analysis.work import WORK_COUNTERS, WORK_LABELS, Capture, determinants, learn, verdicts
from service.models import NcuKernel, RunWorkload, WorkVerdict

# Runs of the line whose captures teach each counter's noise: enough pairs of unchanged code
# in a history of a few dozen commits, a bounded read at every ingest.
WINDOW = 16

_Key = tuple[str, str, str]  # workload, params key, kernel


def _captures(session: Session, run_ids: list[int]) -> dict[int, dict[_Key, Any]]:
    """run id -> (workload, params key, kernel) -> (run workload id, Capture, {counter: label})."""
    rows = session.execute(
        select(
            RunWorkload.run_id,
            RunWorkload.id,
            RunWorkload.name,
            RunWorkload.params_key,
            NcuKernel.kernel,
            NcuKernel.metrics,
            NcuKernel.determinants,
            NcuKernel.profiled_at,
        )
        .join(NcuKernel, NcuKernel.run_workload_id == RunWorkload.id)
        .where(RunWorkload.run_id.in_(run_ids))
    )
    out: dict[int, dict[_Key, Any]] = defaultdict(dict)
    for run_id, wl_id, name, key, kernel, metrics, runner_key, profiled_at in rows:
        values = {c: float(metrics[c]["value"]) for c in WORK_COUNTERS if c in metrics}
        labels = {c: metrics[c].get("label") or WORK_LABELS[c] for c in WORK_COUNTERS
                  if c in metrics}  # fmt: skip
        capture = Capture(determinants(runner_key, metrics), profiled_at, values)
        out[run_id][(name, key, kernel)] = (wl_id, capture, labels)
    return out


def judge_work(session: Session, run_id: int, line: list[int]) -> list[WorkVerdict]:
    """The run's work verdicts against the previous run of the suite and fingerprint along the
    branch (`line`: the runs before it, nearest first), replacing any it had."""
    mine = select(RunWorkload.id).where(RunWorkload.run_id == run_id)
    session.execute(delete(WorkVerdict).where(WorkVerdict.run_workload_id.in_(mine)))
    window = line[:WINDOW]
    captured = _captures(session, [run_id, *window])
    head = captured.get(run_id, {})
    previous = window[0] if window else None
    base = captured.get(previous, {}) if previous is not None else {}
    out = []
    for key, (wl_id, capture, labels) in head.items():
        history = [captured[r][key][1] for r in reversed(window) if key in captured.get(r, {})]
        before = base.get(key, (None, None))[1]
        noise = learn(history)
        for v in verdicts(before.values if before else None, capture.values, noise):
            out.append(
                WorkVerdict(
                    run_workload_id=wl_id,
                    kernel=key[2],
                    counter=v.counter,
                    label=labels[v.counter],
                    value=v.value,
                    base_value=v.base,
                    base_run_id=previous if v.base is not None else None,
                    change=v.change,
                    verdict=v.verdict,
                    tolerance=v.tolerance,
                    pairs=v.pairs,
                )
            )
    session.add_all(out)
    return out

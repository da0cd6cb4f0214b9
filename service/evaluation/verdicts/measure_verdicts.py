"""Measure verdicts of a run: each workload's prepare time, peak memory and numeric error against
the previous run of the suite and fingerprint along the branch, each by its own rule and the
spread the line showed (the SQL around service.analysis.measures)."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.analysis.measures import MEASURES, Prepared, judge, judge_prepare
from service.models import MeasureVerdict, RunWorkload

WINDOW = 16  # runs of the line whose values give the spread: as work verdicts read theirs

_Key = tuple[str, str]  # workload, params key


def _measures(session: Session, run_ids: list[int]) -> dict[int, dict[_Key, tuple[int, dict]]]:
    """run id -> (workload, params key) -> (run workload id, its measures)."""
    rows = session.execute(
        select(
            RunWorkload.run_id,
            RunWorkload.id,
            RunWorkload.name,
            RunWorkload.params_key,
            RunWorkload.measures,
        ).where(RunWorkload.run_id.in_(run_ids))
    )
    out: dict[int, dict[_Key, tuple[int, dict]]] = defaultdict(dict)
    for run_id, wl_id, name, key, measures in rows:
        if measures:
            out[run_id][(name, key)] = (wl_id, measures)
    return out


def prepared(measures: dict) -> Prepared:
    """A run workload's prepare time as its measures hold it (service.store.history.
    workload_rows.measures_of; a run stored before processes said their kind: the suite's)."""
    return Prepared(float(measures["prepare_seconds"]), measures.get("prepare_process", "suite"),
                    measures.get("prepare_paired_base"))  # fmt: skip


def judge_measures(session: Session, run_id: int, line: list[int]) -> list[MeasureVerdict]:
    """The run's measure verdicts against the previous run along the branch (`line`: the runs
    before it, nearest first), replacing any it had."""
    mine = select(RunWorkload.id).where(RunWorkload.run_id == run_id)
    session.execute(delete(MeasureVerdict).where(MeasureVerdict.run_workload_id.in_(mine)))
    window = line[:WINDOW]
    found = _measures(session, [run_id, *window])
    out = []
    for key, (wl_id, measures) in found.get(run_id, {}).items():
        for measure, value in sorted(measures.items()):
            if measure not in MEASURES:
                continue
            # The line's values of this measure, oldest first, and the nearest run's.
            history = [(r, found[r][key][1]) for r in reversed(window)
                       if measure in found.get(r, {}).get(key, (0, {}))[1]]  # fmt: skip
            if measure == "prepare_seconds":  # compared only where timed alike
                times = [*(prepared(m) for _, m in history), prepared(measures)]
                v, at = judge_prepare(times)
                base_run = history[at][0] if at is not None else None
            else:
                base_run, base = (
                    (history[-1][0], history[-1][1][measure]) if history else (None, None)
                )
                v = judge(measure, float(value), base, [m[measure] for _, m in history])
            out.append(
                MeasureVerdict(
                    run_workload_id=wl_id,
                    measure=measure,
                    value=v.value,
                    base_value=v.base,
                    base_run_id=base_run,
                    change=v.change,
                    verdict=v.verdict,
                    tolerance=v.tolerance,
                )
            )
    session.add_all(out)
    return out

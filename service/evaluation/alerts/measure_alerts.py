"""Alerts of a workload's measures beside its duration (prepare time, peak memory, numeric error:
service.analysis.measures): a regressed measure opens an alert at once, notified like a
duration's, and the run that brings it back fixes it.

Unlike a duration, a measure needs no interleaved confirmation: peak memory and numeric error are
the same from run to run of the same code, and a prepare time is judged against the spread its
own line showed. Each measure's alert hangs on a series of its own (store.history.series.
measure_series), which holds no results. A pull request's run opens and closes none, as for
durations; a run analysed again dismisses the alert it opened where its measure no longer
regressed.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.measures import MEASURES, said
from service.evaluation.alerts.lifecycle import (
    announce,
    fixed_in_line,
    line_of,
    new_alert,
    transition,
)
from service.evaluation.verdicts.notes import describe_workload
from service.models import Alert, MeasureVerdict, Run, RunWorkload
from service.models.alert import ACTIVE_STATES
from service.store.history.series import measure_identity, measure_series, new_measure_series


def update_measure_alerts(session: Session, run: Run) -> list[Alert]:
    """Open an alert for each measure the run regressed, fix those it brought back; the opened."""
    if run.pull_request is not None:
        return []
    judged = session.execute(
        select(MeasureVerdict, RunWorkload)
        .join(RunWorkload, RunWorkload.id == MeasureVerdict.run_workload_id)
        .where(RunWorkload.run_id == run.id, MeasureVerdict.measure.in_(list(MEASURES)))
        .order_by(MeasureVerdict.id)
    ).all()
    identity = {v.id: measure_identity(run, w.name, w.params_key, v.measure) for v, w in judged}
    # One read of the series and their alerts: a series exists only once a measure regressed.
    series = measure_series(session, list(identity.values()))
    alerts: dict[int, list[Alert]] = {}
    if series:
        ids = [s.id for s in series.values()]
        for a in session.scalars(
            select(Alert)
            .where(Alert.series_id.in_(ids), Alert.branch == run.branch)
            .order_by(Alert.id.desc())
        ):
            alerts.setdefault(a.series_id, []).append(a)
    opened = []
    line: set[int] | None = None
    for v, w in judged:
        known = series.get(identity[v.id])
        mine = alerts.get(known.id, []) if known is not None else []
        own = next((a for a in mine if a.run_id == run.id), None)
        if own is not None:
            if v.verdict != "regressed" and own.state in ACTIVE_STATES:
                why = f"analysed again: no longer a regression ({v.verdict})"
                transition(session, own, "dismissed", "kernelwatch", why)
            continue
        active = next((a for a in mine if a.state in ACTIVE_STATES), None)
        if v.verdict == "regressed" and active is not None:
            if line is None:
                line = line_of(session, run)
            # A later commit's alert (this one arrived late): this commit came first, and opens
            # its own; the later run, judged again after it, dismisses its own.
            if active.commit_id not in line:
                active = None
        if v.verdict == "regressed" and active is None:
            made = known or new_measure_series(
                session, run, w.name, w.params, v.measure, MEASURES[v.measure].unit
            )
            opened.append(_open(session, run, made.id, v, w))
        elif active is not None and _back(active, v.value):
            base = active.attribution["base"]
            why = (f"{said(v.measure, v.value, base, v.value / base - 1 if base else None, None)}"
                   f": back within {active.attribution['tolerance']:.0%} of the level it "
                   "regressed from")  # fmt: skip
            fixed_in_line(session, active, run, why)
    return opened


def _back(alert: Alert, value: float) -> bool:
    """The value is within the rule's tolerance of the one the alert regressed from."""
    base, tolerance = alert.attribution.get("base"), alert.attribution.get("tolerance")
    if base is None or tolerance is None:
        return False
    if MEASURES[alert.attribution["measure"]].factor > 0:  # a log rule: by ratio
        floor = MEASURES[alert.attribution["measure"]].absolute
        return max(value, floor) / max(base, floor) <= 1 + tolerance
    return value <= base * (1 + tolerance)


def _open(session: Session, run: Run, series_id: int, v: MeasureVerdict, w: RunWorkload) -> Alert:
    assert v.change is not None and v.base_value is not None
    words = said(v.measure, v.value, v.base_value, v.change, None)
    summary = f"{describe_workload(w.name, w.params)}: {words}"
    base_commit_id = None
    if v.base_run_id is not None:
        base_run = session.get(Run, v.base_run_id)
        base_commit_id = base_run.commit_id if base_run is not None else None
    attribution = {"summary": summary, "measure": v.measure, "base": v.base_value,
                   "head": v.value, "tolerance": v.tolerance}  # fmt: skip
    note = (f"{words}: beyond its rule's tolerance of {v.tolerance:.0%}; a measure needs no "
            "interleaved confirmation")  # fmt: skip
    alert = new_alert(session, run, series_id, base_commit_id, "open", v.change, attribution, note)
    announce(session, alert)
    return alert

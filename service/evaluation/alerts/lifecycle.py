"""Alerts: suspected at a regression verdict, confirmed by an interleaved re-run, triaged by
people, closed as fixed when a later commit brings the series back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.verdicts import class_floor
from service.core.errors import Conflict
from service.evaluation.alerts import bisect
from service.evaluation.alerts.attribution import attribute
from service.evaluation.verdicts import confirmations
from service.evaluation.verdicts.confirmations import doubtful
from service.evaluation.verdicts.paired import commit_sha
from service.models import (
    Alert,
    AlertEvent,
    Commit,
    Confirmation,
    Job,
    Repository,
    Result,
    Run,
    RunWorkload,
    Series,
    Verdict,
)
from service.models.alert import ACTIVE_STATES
from service.models.base import utcnow
from service.store.alerts import notifications
from service.store.history.ancestry import ancestry
from service.store.jobs import queue


def transition(session: Session, alert: Alert, to_state: str, actor: str, note: str = "") -> None:
    session.add(
        AlertEvent(
            alert_id=alert.id, from_state=alert.state, to_state=to_state, actor=actor, note=note
        )
    )
    confirmed = alert.state == "suspected" and to_state == "open"
    alert.state, alert.updated_by, alert.updated_at = to_state, actor, utcnow()
    if note:
        alert.note = note
    if confirmed or to_state == "fixed":
        _notify(session, alert, "alert_opened" if confirmed else "alert_fixed", note)


def _notify(session: Session, alert: Alert, kind: str, note: str) -> None:
    """The event for the configured webhooks (service.integrations.notify), written with the
    state change: one per alert and kind."""
    repository = session.get(Repository, alert.repository_id)
    assert repository is not None
    sha = commit_sha(session, alert.commit_id)
    headline = alert.summary if kind == "alert_opened" else f"{alert.summary}; {note}"
    notifications.record(
        session,
        kind,
        f"alert {alert.id} {kind}",
        repository.name,
        alert.branch,
        {"alert_id": alert.id, "state": alert.state, "commit": sha, "change": alert.change,
         "confirmed_change": alert.confirmed_change, "summary": alert.summary, "note": note,
         "headline": headline[:1000], "path": f"/alerts/{alert.id}"},
    )  # fmt: skip


def announce(session: Session, alert: Alert) -> None:
    """Notify an alert opened without a confirmation (a measure's: service.evaluation.alerts.
    measure_alerts)."""
    _notify(session, alert, "alert_opened", "")


def fixed_in_line(session: Session, alert: Alert, run: Run, why: str) -> None:
    """`run` brought the alert's series back: fixed, naming the commit and the run, where the
    run's commit descends from the alert's (an earlier commit arriving late fixes nothing)."""
    if alert.commit_id not in line_of(session, run):
        return
    sha = commit_sha(session, run.commit_id)[:12]
    alert.fixed_by_commit_id = run.commit_id
    transition(
        session, alert, "fixed", "kernelwatch", f"fixed by {sha} (run {run.run_uuid}): {why}"
    )


def update_alerts(session: Session, run: Run, verdicts: list[Verdict]) -> list[Alert]:
    """Open suspected alerts for new regressions and doubtful slowdowns (a young level's pending
    one: its confirmation settles it at once, service.evaluation.verdicts.confirmations), and close
    active alerts whose series came back; the alerts it suspected. A run analysed again (an
    earlier commit arrived after it) keeps the alerts it opened, but dismisses a still suspected
    one whose slowdown it no longer finds (its confirmation cancelled while no runner has it).
    A regression found at a commit before one whose still suspected alert is on the same series
    (a pending verdict the later run settled) opens its own: the later run, decided again after
    it, keeps or dismisses its own. A pull request's run opens and closes none: its verdicts
    are the PR's own (compared with its merge base), not a change of the branch it targets."""
    if run.pull_request is not None:
        return []
    series_ids = [v.series_id for v in verdicts]
    own = {
        a.series_id: a
        for a in session.scalars(
            select(Alert).where(Alert.run_id == run.id, Alert.series_id.in_(series_ids))
        )
    }
    active: dict[int, Alert] = {}
    for a in session.scalars(
        select(Alert)
        .where(
            Alert.series_id.in_(series_ids),
            Alert.state.in_((*ACTIVE_STATES, "fixed")),
            Alert.branch == run.branch,
            Alert.run_id != run.id,
        )
        .order_by(Alert.id)
    ):
        # An active alert first; else the newest fixed one, whose fix may be an earlier commit
        # that arrived after the one that closed it.
        if a.series_id not in active or active[a.series_id].state == "fixed":
            active[a.series_id] = a
    line: set[int] | None = None
    suspected: list[Alert] = []
    for v in verdicts:
        mine = own.get(v.series_id)
        doubt = doubtful(v)
        if mine is not None:
            if mine.state == "suspected" and not doubt:
                transition(
                    session,
                    mine,
                    "dismissed",
                    "kernelwatch",
                    "analysed again after an earlier commit arrived: no longer a regression "
                    f"({v.verdict})",
                )
                _drop_confirmation(session, mine, "the regressions it was to confirm are gone")
            continue
        alert = active.get(v.series_id)
        if doubt and alert is not None and alert.state == "suspected":
            if line is None:
                line = line_of(session, run)
            if alert.commit_id not in line:  # a later commit's suspicion: this one came first
                alert = None
        if doubt and (alert is None or alert.state == "fixed"):
            suspected.append(_suspect(session, run, v))
        elif alert is not None and not doubt and _back(session, alert, v):
            if line is None:
                line = line_of(session, run)
            if alert.commit_id in line:  # a descendant of the regression, not an earlier commit
                _fixed_by(session, alert, run, v)
    return suspected


def line_of(session: Session, run: Run) -> set[int]:
    """The commits of the run's first-parent line, its own and its ancestors' (along its branch)."""
    head = session.get(Commit, run.commit_id)
    assert head is not None
    return set(ancestry(session, head, run.branch))


def _fixed_by(session: Session, alert: Alert, run: Run, v: Verdict) -> None:
    """`run` brought the series back: an open alert is closed as fixed, by kernelwatch, naming
    the commit, the run and the change; so is a still suspected one, whose confirmation would
    add nothing the fix does not say (and which may never come: an imported result, a host
    that is gone), its queued confirmation cancelled. The fix is the first commit back: one
    that arrives after a later commit closed the alert takes its place."""
    if alert.fixed_by_commit_id is not None:
        later = session.get(Commit, alert.fixed_by_commit_id)
        own = session.get(Commit, run.commit_id)
        if later is None or own is None or own.sha not in (later.ancestors or ()):
            return
    elif alert.state == "fixed":
        return  # a person closed it
    sha = commit_sha(session, run.commit_id)[:12]
    base = alert.attribution.get("base_median")
    change = f"{v.change:+.1%} against the regressed level, " if v.change is not None else ""
    why = (
        f"fixed by {sha} (run {run.run_uuid}): {change}back within "
        f"{class_floor(base):.0%} of the {base:.4g} us it regressed from"
    )
    alert.fixed_by_commit_id = run.commit_id
    if alert.state == "fixed":
        session.add(
            AlertEvent(
                alert_id=alert.id,
                from_state=alert.state,
                to_state=alert.state,
                actor="kernelwatch",
                note=why,
            )
        )
        return
    if alert.state == "suspected":
        why += "; before any confirmation"
        _drop_confirmation(session, alert, "the regressions it was to confirm came back first")
    transition(session, alert, "fixed", "kernelwatch", why)


def _drop_confirmation(session: Session, alert: Alert, why: str) -> None:
    """Cancel the alert's confirmation while no runner has it, unless another alert of the same
    job still waits for it."""
    if alert.confirm_job_id is None:
        return
    waiting = session.scalar(
        select(Alert.id).where(
            Alert.confirm_job_id == alert.confirm_job_id,
            Alert.id != alert.id,
            Alert.state == "suspected",
        )
    )
    if waiting is None:
        queue.cancel_if_queued(session, alert.confirm_job_id, why)


def refusal(alert: Alert, state: str) -> str | None:
    """Why a person may not move `alert` to `state`; None where they may."""
    if alert.state in ("suspected", "dismissed") and state != "invalid":
        return (f"alert {alert.id} is {alert.state}: only confirmed alerts are triaged (it can "
                "still be marked invalid)")  # fmt: skip
    return None


def triage(session: Session, alert: Alert, state: str, actor: str, note: str) -> None:
    """A person's call on an alert (Conflict where `refusal` forbids it). Marked fixed without
    a fixing commit known, the newest commit measured for the series on the branch is taken as
    the fix: the level from there on is accepted (service.analysis.segments)."""
    if (why := refusal(alert, state)) is not None:
        raise Conflict(why)
    if state == "fixed" and alert.fixed_by_commit_id is None:
        alert.fixed_by_commit_id = session.scalar(
            select(Result.commit_id)
            .where(Result.series_id == alert.series_id, Result.branch == alert.branch)
            .order_by(Result.committed_at.desc(), Result.id.desc())
            .limit(1)
        )
    transition(session, alert, state, actor, note)


def _back(session: Session, alert: Alert, v: Verdict) -> bool:
    """The head is within the class floor of the median the alert regressed from."""
    base = alert.attribution.get("base_median")
    if v.result_id is None or not base:
        return False
    result = session.get(Result, v.result_id)
    return result is not None and (result.median - base) / base <= class_floor(base)


def _suspect(session: Session, run: Run, v: Verdict) -> Alert:
    series = session.get(Series, v.series_id)
    assert series is not None and v.change is not None
    base_commit_id = v.baseline_commits[0] if v.baseline_commits else None
    base_run = (
        session.scalars(
            select(Run)
            .where(
                Run.commit_id == base_commit_id,
                Run.suite == run.suite,
                Run.fingerprint == run.fingerprint,
            )
            .order_by(Run.id.desc())
        ).first()
        if base_commit_id
        else None
    )
    retired = (
        session.get(Series, v.redefined_from_series_id) if v.redefined_from_series_id else None
    )
    attribution = attribute(session, series, run, base_run, v.change, base_series=retired)
    attribution["base_median"] = v.baseline_median
    if retired is not None:  # the base measured the workload as it was defined before
        attribution["redefined_from"] = {"series_id": retired.id, "params": retired.params}
    note = (f"{v.verdict} {v.change:+.1%} (q = {v.q_value:.2g}); to be confirmed by base and "
            "head timed interleaved")  # fmt: skip
    return new_alert(session, run, series.id, base_commit_id, "suspected", v.change, attribution,
                     note)  # fmt: skip


def new_alert(
    session: Session,
    run: Run,
    series_id: int,
    base_commit_id: int | None,
    state: str,
    change: float,
    attribution: dict[str, Any],
    note: str,
) -> Alert:
    """An alert the run opened on the series, with its first event (from nothing)."""
    alert = Alert(
        repository_id=run.repository_id,
        series_id=series_id,
        run_id=run.id,
        commit_id=run.commit_id,
        base_commit_id=base_commit_id,
        branch=run.branch,
        state=state,
        change=change,
        summary=attribution["summary"],
        attribution=attribution,
    )
    session.add(alert)
    session.flush()
    session.add(AlertEvent(alert_id=alert.id, from_state=None, to_state=state,
                           actor="kernelwatch", note=note))  # fmt: skip
    return alert


def confirm(
    session: Session, job: Job, head: dict[str, Any], base: dict[str, Any], actor: str
) -> list[Alert]:
    """Judge a confirmation job's series on the interleaved base and head samples
    (service.evaluation.verdicts.confirmations) and move each alert it was for as its series'
    finding says: open where the head is slower, dismissed where it is not."""
    found = {(c.run_id, c.series_id): c for c in confirmations.judge(session, job, head, base)}
    alerts = list(session.scalars(select(Alert).where(Alert.id.in_(job.payload["alert_ids"]))))
    for alert in alerts:
        c = found.get((alert.run_id, alert.series_id))
        if alert.state == "suspected" and c is not None:
            _apply_finding(session, alert, c, actor, job.max_attempts)
    return alerts


def confirm_measured(
    session: Session, run: Run, suspected: list[Alert], max_attempts: int
) -> list[Alert]:
    """The alerts just suspected whose series the run already measured against their base,
    interleaved (runner.run.paired): moved at once as that finding says, with no job to wait
    for; the rest, which a confirmation job is to settle."""
    found = confirmations.measured_in_run(session, run)
    waiting = []
    for alert in suspected:
        c = found.get(alert.series_id)
        if c is None or c.base_commit_id != alert.base_commit_id:
            waiting.append(alert)
        else:
            _apply_finding(session, alert, c, f"runner of run {run.run_uuid}", max_attempts)
    return waiting


def _apply_finding(
    session: Session, alert: Alert, c: Confirmation, actor: str, max_attempts: int
) -> None:
    if c.state == "unmeasured":
        transition(
            session,
            alert,
            "dismissed",
            actor,
            "the confirmation run did not measure this workload on both sides",
        )
        return
    alert.confirmed_change = c.change
    alert.attribution = {
        **alert.attribution,
        "confirmation": {"base_median": c.base_median, "head_median": c.head_median,
                         "change": c.change, "p_value": c.p_value},
    }  # fmt: skip
    if c.state == "confirmed":
        transition(
            session,
            alert,
            "open",
            actor,
            f"confirmed interleaved: {c.change:+.1%} (p = {c.p_value:.2g})",
        )
        bisect.start(session, alert, max_attempts, actor)
        if alert.fixed_by_commit_id is not None:
            sha = commit_sha(session, alert.fixed_by_commit_id)[:12]
            transition(
                session,
                alert,
                "fixed",
                "kernelwatch",
                f"fixed by {sha}, which came back to the earlier level before the confirmation did",
            )
    else:
        transition(
            session,
            alert,
            "dismissed",
            actor,
            f"not reproduced interleaved: {c.change:+.1%} (p = {c.p_value:.2g})",
        )


def notify_broken(session: Session, run: Run) -> None:
    """A run whose build failed or whose workloads failed their correctness check: an event
    for the configured webhooks (one per run; the watched branches are the targets' filter)."""
    failing = [
        f"{name} {params_key}"
        for name, params_key in session.execute(
            select(RunWorkload.name, RunWorkload.params_key).where(
                RunWorkload.run_id == run.id, RunWorkload.status == "correctness_failed"
            )
        )
    ]
    if run.build_status == "ok" and not failing:
        return
    repository = session.get(Repository, run.repository_id)
    assert repository is not None
    sha = commit_sha(session, run.commit_id)
    if run.build_status != "ok":
        what = "the build failed"
    else:
        what = f"{len(failing)} workload(s) failed their correctness check: " + ", ".join(
            failing[:5]
        )
    notifications.record(
        session,
        "run_broken",
        f"run {run.run_uuid} broken",
        repository.name,
        run.branch,
        {"run_id": run.run_uuid, "commit": sha, "build_status": run.build_status,
         "correctness_failed": failing, "headline": f"{sha[:12]}: {what}",
         "path": f"/commits/{sha}"},
    )  # fmt: skip

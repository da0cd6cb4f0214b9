"""Doubt settled by measuring: a series' doubtful slowdown at a run measured again, base and head
built and timed interleaved (A B A B) on one runner, and what that finds made the series'
verdict at that run wherever it is read.

Doubt is a regression suspected on a branch (its alert waits for the confirmation) and a
young level's pending slowdown (a level of one run has not shown how far its runs wander, and
the next push may be days away; a pull request's run has no next run of its line at all). One
job per run and base commit measures every such series of the run (`queue`); its document is
judged series by series (`judge`, the rule of service.analysis.confirmation), the alerts it
was for move with it (service.evaluation.alerts.lifecycle.confirm), and the run is analysed again,
so that its verdicts (`settle`, in service.evaluation.verdicts.evaluate), alerts, commit status,
pull request comment and notifications all say what the rerun found.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis import confirmation as rule
from service.evaluation.verdicts.paired import commit_sha, series_samples
from service.models import Alert, Confirmation, Job, Run, Runner, Series, Verdict
from service.models.base import utcnow
from service.store.jobs import queue as queue_store
from service.store.verdicts.waiting import reopen

LIVE_JOB = ("queued", "running")
PENDING = ("pending:", "confirming:")  # how a pending verdict's note says why it waits


def doubtful(v: Verdict) -> bool:
    """A slowdown not yet settled: regressed, or pending (a young level's, one control's)."""
    return v.verdict in ("regressed", "pending") and v.change is not None and v.change > 0


def pending_improvement(v: Verdict) -> bool:
    """A speed-up not yet settled: no alert waits for it, but its verdict does (on a pull
    request, which has no next run of its line, for ever)."""
    return v.verdict == "pending" and v.change is not None and v.change < 0


def applies(c: Confirmation, v: Verdict) -> bool:
    """Whether `c` is about `v`'s doubt: a job's is (it measured the verdict's base); one the
    run measured itself (runner.run.paired: against the head's parent, or a pull request's
    merge base) only where that base is the commit the verdict compares with, not where
    commits between were never measured (a change among them is no change of this one)."""
    if c.job_id is not None:
        return True
    return bool(v.baseline_commits) and c.base_commit_id == v.baseline_commits[0]


def measured_in_run(session: Session, run: Run) -> dict[int, Confirmation]:
    """The run's confirmations it measured itself, decided at its ingest (series -> row)."""
    return {
        c.series_id: c
        for c in session.scalars(
            select(Confirmation).where(Confirmation.run_id == run.id, Confirmation.job_id.is_(None))
        )
    }


def queue(
    session: Session,
    run: Run,
    verdicts: list[Verdict],
    suspected: list[Alert],
    max_attempts: int,
) -> list[Job]:
    """Confirmation jobs for the run's doubts that have none yet: on a branch, the series whose
    alerts it just suspected; on a pull request (which opens no alert), every doubtful
    slowdown; on both, every pending speed-up. One job per base commit, on the runner that
    measured the run."""
    if run.pull_request is not None:
        wanted = {v.series_id for v in verdicts if doubtful(v)}
    else:
        wanted = {a.series_id for a in suspected}
    wanted |= {v.series_id for v in verdicts if pending_improvement(v)}
    rows = {
        c.series_id: c
        for c in session.scalars(select(Confirmation).where(Confirmation.run_id == run.id))
    }
    by_base: dict[int, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        have = rows.get(v.series_id)
        if v.series_id in wanted and (have is None or not applies(have, v)) and v.baseline_commits:
            by_base[v.baseline_commits[0]].append(v)
    alerts = {a.series_id: a for a in suspected}
    runner = session.get(Runner, run.runner_id) if run.runner_id else None
    jobs = []
    for base_id, group in by_base.items():
        jobs.append(_queue_one(session, run, base_id, group, alerts, runner, max_attempts, rows))
    return jobs


def _queue_one(
    session: Session,
    run: Run,
    base_id: int,
    group: list[Verdict],
    alerts: dict[int, Alert],
    runner: Runner | None,
    max_attempts: int,
    rows: dict[int, Confirmation],
) -> Job:
    base_sha = commit_sha(session, base_id)
    (job,) = queue_store.enqueue(
        session,
        repository_id=run.repository_id,
        sha=commit_sha(session, run.commit_id),
        branch=run.branch,
        label_sets=[{"runner": runner.name} if runner else {}],
        max_attempts=max_attempts,
        kind="confirm",
        summary=f"confirm {len(group)} doubtful change(s) against {base_sha[:12]}",
    )
    mine = []
    for v in group:
        # One the run measured itself against another base is replaced: this job measures
        # against the verdict's.
        row = rows.get(v.series_id) or Confirmation(run_id=run.id, series_id=v.series_id)
        row.base_series_id, row.base_commit_id = v.redefined_from_series_id, base_id
        row.job_id, row.state, row.decided_at = job.id, "queued", None
        row.change = row.p_value = row.base_median = row.head_median = None
        session.add(row)
        mine.append(row)
    session.flush()
    workloads = []
    for v in group:
        for series_id in (v.series_id, v.redefined_from_series_id):
            series = session.get(Series, series_id) if series_id else None
            if series is not None:  # a redefined workload's base side as it was defined then
                workloads.append({"name": series.workload, "params": series.params})
    payload: dict[str, Any] = {
        "base_sha": base_sha,
        "alert_ids": [alerts[v.series_id].id for v in group if v.series_id in alerts],
        "confirmation_ids": [c.id for c in mine],
        "workloads": workloads,
        "suite": run.suite,
    }
    if run.pull_request is not None:
        payload["pull_request"] = {"number": run.pull_request, "base_ref": run.base_ref}
    job.payload = payload
    for v in group:
        if v.series_id in alerts:
            alerts[v.series_id].confirm_job_id = job.id
        _confirming(v, job.id)
    return job


def _confirming(v: Verdict, job_id: int) -> None:
    """A pending verdict whose confirmation is to come says so."""
    if v.verdict == "pending":
        v.note = f"confirming: job {job_id} measures base and head interleaved; {v.note}"


def of_job(session: Session, job: Job) -> list[Confirmation]:
    """The confirmations a job measures; for a job queued before confirmations had rows of
    their own (its payload names only alerts), rows made from its alerts."""
    ids = (job.payload or {}).get("confirmation_ids")
    if ids is not None:
        return list(session.scalars(select(Confirmation).where(Confirmation.id.in_(ids))))
    alert_ids = (job.payload or {}).get("alert_ids") or []
    out = []
    for alert in session.scalars(select(Alert).where(Alert.id.in_(alert_ids))):
        found = session.scalar(
            select(Confirmation).where(
                Confirmation.run_id == alert.run_id, Confirmation.series_id == alert.series_id
            )
        )
        if found is None:
            before = alert.attribution.get("redefined_from") or {}
            found = Confirmation(
                run_id=alert.run_id, series_id=alert.series_id, job_id=job.id,
                base_series_id=before.get("series_id"), base_commit_id=alert.base_commit_id,
            )  # fmt: skip
            session.add(found)
        out.append(found)
    session.flush()
    return out


def judge(
    session: Session, job: Job, head: dict[str, Any], base: dict[str, Any]
) -> list[Confirmation]:
    """Each confirmation of the job judged on the interleaved samples (Bonferroni across the
    job's: a handful at most), and its run put back on the analysis backlog, whose verdicts
    then say what was found."""
    found = of_job(session, job)
    for c in found:
        series = session.get(Series, c.series_id)
        before = session.get(Series, c.base_series_id) if c.base_series_id else None
        assert series is not None
        head_samples = series_samples(head, series)
        base_samples = series_samples(base, before or series)
        c.decided_at = utcnow()
        if head_samples is None or base_samples is None:
            c.state = "unmeasured"
            continue
        measured = rule.remeasure(head_samples, base_samples, rule.ALPHA / len(found))
        c.state = measured.state
        c.change, c.p_value = measured.change, measured.p_found
        c.base_median, c.head_median = measured.base_median, measured.head_median
    reopen(session, {c.run_id for c in found})
    return found


def runs_of_job(session: Session, job: Job) -> list[int]:
    """The runs whose doubts a confirmation job measured."""
    return sorted(
        set(session.scalars(select(Confirmation.run_id).where(Confirmation.job_id == job.id)))
    )


def settle(session: Session, run: Run, verdicts: list[Verdict]) -> None:
    """The run's verdicts as its confirmations found them: a regressed or pending slowdown made
    regressed or unchanged, its reason in front of its note; a pending one whose confirmation
    is still to come says so ("confirming: job N")."""
    rows = {
        c.series_id: c
        for c in session.scalars(select(Confirmation).where(Confirmation.run_id == run.id))
    }
    if not rows:
        return
    live = set(
        session.scalars(
            select(Job.id).where(
                Job.id.in_([c.job_id for c in rows.values() if c.job_id is not None]),
                Job.state.in_(LIVE_JOB),
            )
        )
    )
    for v in verdicts:
        c = rows.get(v.series_id)
        if c is None or not applies(c, v):
            continue
        if c.state == "queued":
            if c.job_id in live:
                _confirming(v, c.job_id)
            continue
        settled = rule.settle(v.verdict, c.state, c.change, c.p_value)
        reason = rule.settle_note(settled, v.change or 0.0, c.change, c.p_value)
        if settled != v.verdict or (reason and v.verdict == "regressed"):
            # A slowdown its code does not reproduce was this run sitting off: the level's
            # baseline leaves it out (service.evaluation.verdicts.baseline), as one the next run
            # showed.
            v.outlier = v.outlier or settled == "unchanged"
            v.verdict = settled
            # What said it was pending, and why, is settled now.
            kept = [part for part in v.note.split("; ") if part and not part.startswith(PENDING)]
            v.note = "; ".join([reason, *kept])

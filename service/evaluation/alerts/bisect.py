"""Bisection: which commit of a multi-commit push brought a confirmed regression.

When an alert opens at the head of a push of several commits, the commits strictly between the
alert's base (good) and the head (bad) are candidates. One "bisect" job at a time measures the
middle candidate interleaved with the current good commit, on the runner that measured the head;
its document is judged with the confirmation's rule and the range halves, until the earliest bad
commit is known. A commit is bad only where it also brings at least half the regression (on a
log scale, counted from the alert's base): a small slowdown of its own, real or a loaded host's
noise, under a much larger regression is not the commit that brought it. Bisect documents are
not stored as runs. A workload redefined in place (its launch settings changed, its work not:
service.evaluation.verdicts.redefinitions) is bisected like any other: each side is measured
under whichever definition its commit carries, and so judged against the old definition's level.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.confirmation import ALPHA, remeasure
from service.evaluation.verdicts.paired import commit_sha, series_samples
from service.models import Alert, AlertEvent, Commit, Job, Run, Runner, Series
from service.schemas.document import RunDocument
from service.store.jobs import queue
from service.store.upsert import get_or_create


def start(session: Session, alert: Alert, max_attempts: int, actor: str) -> None:
    """Begin bisecting a just-opened alert if its head arrived in a push of several commits
    (its steps' jobs allowed `max_attempts`, as the confirmation's were)."""
    run = session.get(Run, alert.run_id)
    run_job = session.get(Job, run.job_id) if run is not None and run.job_id else None
    pushed = list((run_job.payload or {}).get("push_commits") or []) if run_job else []
    head_sha = commit_sha(session, alert.commit_id)
    if run is None or len(pushed) < 2 or pushed[-1] != head_sha:
        return
    base_sha = commit_sha(session, alert.base_commit_id)
    before = pushed[:-1]
    candidates = before[before.index(base_sha) + 1 :] if base_sha in before else before
    alert.bisect = {
        "state": "running",
        "good": base_sha,
        "bad": head_sha,
        "candidates": candidates,
        "order": candidates,  # the range as pushed, oldest first
        "tested": {},
        # log(1 + change) of the regression, and of the current good commit over the base.
        "regression": math.log1p(max(alert.confirmed_change or alert.change, 0.0)),
        "good_level": 0.0,
    }
    if candidates:
        _queue_next(session, alert, run, max_attempts)
    else:
        _finish(session, alert, actor)


def _queue_next(session: Session, alert: Alert, run: Run, max_attempts: int) -> Job:
    state = alert.bisect
    candidates = state["candidates"]
    sha = candidates[(len(candidates) - 1) // 2]
    series = session.get(Series, alert.series_id)
    assert series is not None
    runner = session.get(Runner, run.runner_id) if run.runner_id else None
    (job,) = queue.enqueue(
        session,
        repository_id=alert.repository_id,
        sha=sha,
        branch=alert.branch,
        label_sets=[{"runner": runner.name} if runner else {}],
        max_attempts=max_attempts,
        kind="bisect",
        summary=f"bisect alert {alert.id}: {sha[:12]} against good {state['good'][:12]}",
    )
    workloads = [{"name": series.workload, "params": series.params}]
    before = alert.attribution.get("redefined_from")
    if before is not None:  # a commit of the range may carry either definition
        workloads.append({"name": series.workload, "params": before["params"]})
    job.payload = {
        "base_sha": state["good"],
        "alert_ids": [alert.id],
        "workloads": workloads,
        "suite": run.suite,
    }
    return job


def _definitions(session: Session, alert: Alert, series: Series) -> tuple[Series, ...]:
    """The series of the alert's workload, and the one it retired where it was redefined in
    place: the definitions a commit of the range may carry."""
    before = alert.attribution.get("redefined_from")
    retired = session.get(Series, before["series_id"]) if before else None
    return (series,) if retired is None else (series, retired)


def _samples(document: dict[str, Any], definitions: tuple[Series, ...]) -> Any:
    """The document's samples of the first of `definitions` it measured (None: none)."""
    for series in definitions:
        found = series_samples(document, series)
        if found is not None:
            return found
    return None


def apply(session: Session, job: Job, doc: RunDocument, actor: str) -> list[Alert]:
    """Judge the tested commit of a bisect job and narrow (or finish) each alert's range."""
    assert doc.paired_base is not None
    head, base = doc.model_dump(mode="json"), doc.paired_base.model_dump(mode="json")
    sha = job.commit_sha
    alerts = list(session.scalars(select(Alert).where(Alert.id.in_(job.payload["alert_ids"]))))
    for alert in alerts:
        state: dict[str, Any] = dict(alert.bisect or {})
        candidates = list(state.get("candidates") or [])
        if state.get("state") != "running" or sha not in candidates:
            continue
        series = session.get(Series, alert.series_id)
        assert series is not None
        # The tested commit as it defines the workload, the good one likewise (the new
        # definition first for a candidate, the old one first for the good side).
        definitions = _definitions(session, alert, series)
        head_samples = _samples(head, definitions)
        base_samples = _samples(base, definitions[::-1])
        if base_samples is None:
            state["state"] = "failed"
            state["reason"] = f"the good commit {state['good'][:12]} did not measure the workload"
            alert.bisect = state
            continue
        run = session.get(Run, alert.run_id)
        if head_samples is None:
            # Like `git bisect skip`: a commit that does not build or measure says nothing
            # about the regression; test its neighbours instead.
            why = "the build failed" if doc.build.status != "ok" else "no timing of the workload"
            state["tested"] = {**state["tested"], sha: {"skipped": True, "reason": why}}
            state["skipped"] = [*state.get("skipped", []), sha]
            state["candidates"] = [c for c in candidates if c != sha]
            alert.bisect = state
            if state["candidates"] and run is not None:
                _queue_next(session, alert, run, job.max_attempts)
            else:
                _finish(session, alert, actor)
            continue
        measured = remeasure(head_samples, base_samples, ALPHA)
        change, p = measured.change, measured.p_value
        level = state.get("good_level", 0.0) + math.log1p(change)
        bad = measured.slower and brings_most(level, state.get("regression"))
        state["tested"] = {**state["tested"], sha: {"change": change, "p_value": p, "bad": bad}}
        i = candidates.index(sha)
        # Every tested commit gets its row: the alert names and links it, good or bad.
        c = doc.commit
        get_or_create(
            session,
            Commit,
            {"repository_id": alert.repository_id, "sha": sha},
            parents=c.parents,
            ancestors=c.ancestors,
            author_name=c.author_name,
            author_email=c.author_email,
            message=c.message,
            committed_at=c.committed_at,
        )
        if bad:
            state["bad"], state["candidates"] = sha, candidates[:i]
        else:
            state["good"], state["candidates"] = sha, candidates[i + 1 :]
            if measured.slower:  # a real step short of half: later commits start above it
                state["good_level"] = level
        alert.bisect = state
        if state["candidates"] and run is not None:
            _queue_next(session, alert, run, job.max_attempts)
        else:
            _finish(session, alert, actor)
    return alerts


def brings_most(level: float, regression: float | None) -> bool:
    """Whether a commit `level` (log ratio over the alert's base) above the base carries at
    least half the `regression` (log ratio; None: a bisection begun before it was recorded)."""
    return regression is None or level >= regression / 2


def _finish(session: Session, alert: Alert, actor: str) -> None:
    state = dict(alert.bisect)
    sha = state["bad"]
    order = state.get("order") or []
    # Skipped commits between the last good and the first bad one leave the answer open.
    low = order.index(state["good"]) if state["good"] in order else -1
    high = order.index(sha) if sha in order else len(order)
    untestable = [c for c in order[low + 1 : high] if c in state.get("skipped", [])]
    tested = state.get("tested", {}).get(sha)
    change = tested["change"] if tested else (alert.confirmed_change or alert.change)
    state.update(state="done", candidates=[])
    if untestable:
        state.update(first_bad=None, first_bad_candidates=[*untestable, sha])
        alert.bisect = state
        names = ", ".join(c[:12] for c in [*untestable, sha])
        note = f"bisected: the first bad commit is one of {names} ({len(untestable)} untestable)"
    else:
        state.update(first_bad=sha)
        alert.bisect = state
        commit = session.scalars(
            select(Commit).where(Commit.repository_id == alert.repository_id, Commit.sha == sha)
        ).one()
        alert.first_bad_commit_id = commit.id
        note = f"bisected: first bad commit {sha[:12]} ({change:+.1%})"
    session.add(
        AlertEvent(
            alert_id=alert.id,
            from_state=alert.state,
            to_state=alert.state,
            actor=actor,
            note=note,
        )
    )

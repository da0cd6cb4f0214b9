"""What the GitHub integration reads to report a run (its commit status, a pull request's
comment); service.integrations.github (statuses.py, comments.py) turns it into words and HTTP."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.models import (
    Commit,
    MeasureVerdict,
    PullRequest,
    Repository,
    Run,
    RunWorkload,
    Series,
    Verdict,
    WorkVerdict,
)


def newest_per_environment(session: Session, run: Run) -> list[Run]:
    """The newest run of `run`'s commit and suite on each fingerprint."""
    candidates = session.scalars(
        select(Run)
        .where(Run.commit_id == run.commit_id, Run.suite == run.suite)
        .order_by(Run.finished_at.desc(), Run.id.desc())
    )
    newest: dict[str, Run] = {}
    for candidate in candidates:
        newest.setdefault(candidate.fingerprint, candidate)
    return list(newest.values())


def verdicts_with_series(session: Session, run_ids: Iterable[int]) -> list[tuple[Verdict, Series]]:
    rows = session.execute(
        select(Verdict, Series)
        .join(Series, Series.id == Verdict.series_id)
        .where(Verdict.run_id.in_(list(run_ids)))
        .order_by(Verdict.id)
    ).all()
    return [(v, s) for v, s in rows]


def workloads_in(
    session: Session, run_ids: Iterable[int], states: Iterable[str]
) -> list[RunWorkload]:
    """The runs' workloads in these states (broken ones, say)."""
    return list(
        session.scalars(
            select(RunWorkload)
            .where(RunWorkload.run_id.in_(list(run_ids)), RunWorkload.status.in_(list(states)))
            .order_by(RunWorkload.id)
        )
    )


def grown_work(session: Session, run_ids: Iterable[int]) -> list[tuple[WorkVerdict, RunWorkload]]:
    """The runs' work verdicts of counters that changed upwards (or from nothing)."""
    rows = session.execute(
        select(WorkVerdict, RunWorkload)
        .join(RunWorkload, RunWorkload.id == WorkVerdict.run_workload_id)
        .where(
            RunWorkload.run_id.in_(list(run_ids)),
            WorkVerdict.verdict == "changed",
            (WorkVerdict.change > 0) | WorkVerdict.change.is_(None),
        )
    ).all()
    return [(v, w) for v, w in rows]


def regressed_measures(
    session: Session, run_ids: Iterable[int]
) -> list[tuple[MeasureVerdict, RunWorkload]]:
    """The runs' measures beside the durations (prepare time, peak memory, numeric error) that
    regressed, the most first."""
    rows = session.execute(
        select(MeasureVerdict, RunWorkload)
        .join(RunWorkload, RunWorkload.id == MeasureVerdict.run_workload_id)
        .where(RunWorkload.run_id.in_(list(run_ids)), MeasureVerdict.verdict == "regressed")
        .order_by(MeasureVerdict.change.desc(), MeasureVerdict.id)
    ).all()
    return [(v, w) for v, w in rows]


def pull_request_run(
    session: Session, run_uuid: str
) -> tuple[Run, str, PullRequest, Commit | None] | None:
    """A pull request's run: the run, its repository's name, the pull request and the run's
    commit; None where the run is no pull request's."""
    row = session.execute(
        select(Run, Repository.name, PullRequest)
        .join(Repository, Repository.id == Run.repository_id)
        .join(
            PullRequest,
            (PullRequest.repository_id == Run.repository_id)
            & (PullRequest.number == Run.pull_request),
        )
        .where(Run.run_uuid == run_uuid)
    ).one_or_none()
    if row is None:
        return None
    run, repository, pr = row
    return run, repository, pr, session.get(Commit, run.commit_id)


def commit_of(session: Session, run: Run) -> Commit | None:
    return session.get(Commit, run.commit_id)


def set_comment_id(session: Session, pull_request_id: int, comment_id: int) -> None:
    stored = session.get(PullRequest, pull_request_id)
    if stored is not None:
        stored.comment_id = comment_id

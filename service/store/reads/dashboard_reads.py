"""Reads the dashboards need beyond the API's: overview lists and trend choices.

Every query here is bounded (LIMIT or a fixed set of keys) and reads plain columns along an
index, so the pages stay fast on a database of a million results: runs are ordered by id (their
primary key, i.e. arrival order) rather than by an unindexed time column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, or_, select
from sqlalchemy.orm import Session

from service.models import Alert, Commit, Job, Repository, Run, Runner, Series, Verdict
from service.models.alert import ACTIVE_STATES
from service.models.series import MEASURE_METHOD
from service.store.alerts.places import inherited, without_bisected

ACTIVE_JOB_STATES = ("queued", "running")
# The branch lists read the newest runs only: a GROUP BY over every run grew with the history
# (the overview took 10 ms at 200 commits, 19 ms at 10,000 on PostgreSQL).
BRANCH_WINDOW = 1000


@dataclass(frozen=True)
class RecentRun:
    run_id: str
    repository: str
    branch: str
    suite: str
    status: str
    build_status: str
    gpu_name: str
    finished_at: datetime
    sha: str
    author: str
    subject: str
    verdicts: dict[str, int]
    # first bad sha -> regressed series whose alert a bisection moved to that earlier commit:
    # counted there, not among this run's regressions
    bisected: dict[str, int]


@dataclass(frozen=True)
class BranchRow:
    repository: str
    branch: str
    runs: int
    newest_sha: str
    newest_at: datetime


def repositories(session: Session) -> list[str]:
    return list(session.scalars(select(Repository.name).order_by(Repository.name).limit(500)))


def newest_runs(repository_id: int | None = None) -> Any:
    """The newest BRANCH_WINDOW runs (of a repository), as a subquery: what the branch lists
    read, so that they cost the same however long the history behind them."""
    query = select(Run.id, Run.repository_id, Run.branch, Run.fingerprint, Run.gpu_name)
    query = query.order_by(Run.id.desc())
    if repository_id is not None:
        query = query.where(Run.repository_id == repository_id)
    return query.limit(BRANCH_WINDOW).subquery()


def branches(session: Session) -> list[BranchRow]:
    """The branches of the newest BRANCH_WINDOW runs, with their run count among those and the
    commit of their newest run."""
    window = newest_runs()
    grouped = (
        select(
            window.c.repository_id,
            window.c.branch,
            func.count().label("runs"),
            func.max(window.c.id).label("newest"),
        )
        .group_by(window.c.repository_id, window.c.branch)
        .subquery()
    )
    rows = session.execute(
        select(Repository.name, grouped.c.branch, grouped.c.runs, Commit.sha, Commit.committed_at)
        .join(grouped, grouped.c.repository_id == Repository.id)
        .join(Run, Run.id == grouped.c.newest)
        .join(Commit, Commit.id == Run.commit_id)
        .order_by(Repository.name, grouped.c.runs.desc())
        .limit(200)
    ).all()
    return [BranchRow(*row) for row in rows]


def recent_runs(session: Session, limit: int = 15) -> list[RecentRun]:
    """The newest runs with their commit and verdict counts, newest first."""
    rows = session.execute(
        select(
            Run.id,
            Run.run_uuid,
            Repository.name,
            Run.branch,
            Run.suite,
            Run.status,
            Run.build_status,
            Run.gpu_name,
            Run.finished_at,
            Commit.sha,
            Commit.author_name,
            func.substr(Commit.message, 1, 200),
            Run.commit_id,
        )
        .join(Commit, Commit.id == Run.commit_id)
        .join(Repository, Repository.id == Run.repository_id)
        .order_by(Run.id.desc())
        .limit(limit)
    ).all()
    counts: dict[int, dict[str, int]] = {row[0]: {} for row in rows}
    for run_id, verdict, n in session.execute(
        select(Verdict.run_id, Verdict.verdict, func.count())
        .where(Verdict.run_id.in_(counts))
        .group_by(Verdict.run_id, Verdict.verdict)
    ):
        counts[run_id][verdict] = n
    moved = inherited(session, [row[12] for row in rows])
    out = []
    for row in rows:
        bisected = {sha: len(ids) for sha, ids in moved.get((row[12], row[3]), {}).items()}
        verdicts = without_bisected(counts[row[0]], sum(bisected.values()))
        subject = row[11].split("\n", 1)[0]
        out.append(RecentRun(*row[1:11], subject, verdicts, bisected))
    return out


def active_alerts(session: Session, limit: int = 20) -> list[Alert]:
    return list(
        session.scalars(
            select(Alert)
            .where(Alert.state.in_(ACTIVE_STATES))
            .order_by(Alert.id.desc())
            .limit(limit)
        )
    )


def alerts(
    session: Session,
    states: list[str],
    repository_id: int | None,
    limit: int,
    sha_prefix: str | None = None,
    series_id: int | None = None,
) -> list[Alert]:
    """Alerts newest first; `sha_prefix`: those found at a commit, or bisected to it."""
    query = select(Alert).order_by(Alert.id.desc()).limit(limit)
    if states:
        query = query.where(Alert.state.in_(states))
    if repository_id is not None:
        query = query.where(Alert.repository_id == repository_id)
    if series_id is not None:
        query = query.where(Alert.series_id == series_id)
    if sha_prefix is not None:
        named = select(Commit.id).where(Commit.sha.startswith(sha_prefix, autoescape=True))
        query = query.where(or_(Alert.commit_id.in_(named), Alert.first_bad_commit_id.in_(named)))
    return list(session.scalars(query))


def runners(session: Session) -> list[Runner]:
    return list(session.scalars(select(Runner).order_by(Runner.name).limit(200)))


def queue(session: Session, limit: int = 20) -> tuple[dict[str, int], list[Job]]:
    """Job counts per state, and the queued and running jobs, newest first."""
    counts = dict(session.execute(select(Job.state, func.count()).group_by(Job.state)).all())
    active = session.scalars(
        select(Job).where(Job.state.in_(ACTIVE_JOB_STATES)).order_by(Job.id.desc()).limit(limit)
    )
    return counts, list(active)


# --- trends -----------------------------------------------------------------------------------


def newest_branch(session: Session, repository_id: int) -> str | None:
    return session.scalar(
        select(Run.branch)
        .where(Run.repository_id == repository_id)
        .order_by(Run.id.desc())
        .limit(1)
    )


def repository_branches(session: Session, repository_id: int) -> list[str]:
    """The branches of the repository's newest BRANCH_WINDOW runs (any other one can still be
    named in the URL)."""
    window = newest_runs(repository_id)
    return list(session.scalars(select(window.c.branch).distinct().limit(200)))


def has_metric(session: Session, repository_id: int, metric: str) -> bool:
    found = select(Series.id).where(Series.repository_id == repository_id, Series.metric == metric)
    return session.scalar(found.limit(1)) is not None


def gpu_names(session: Session, repository_id: int) -> list[tuple[str, str]]:
    """(fingerprint, GPU name) of each environment the repository's newest runs ran in."""
    window = newest_runs(repository_id)
    found = select(window.c.fingerprint, window.c.gpu_name).distinct().limit(500)
    return sorted({f: name for f, name in session.execute(found)}.items())


def metrics(session: Session, repository_id: int) -> list[str]:
    """The metrics a trend can draw: a measure's series (an alert's anchor) has no points."""
    return list(
        session.scalars(
            select(Series.metric)
            .where(Series.repository_id == repository_id, Series.method != MEASURE_METHOD)
            .distinct()
            .order_by(Series.metric)
            .limit(100)
        )
    )


@dataclass(frozen=True)
class SeriesOption:
    id: int
    workload: str
    params: dict[str, Any]
    kernel: str
    unit: str
    fingerprint: str


def series_options(session: Session, repository_id: int, metric: str) -> list[SeriesOption]:
    """Every series of the repository with this metric (the trend page's choices)."""
    rows = session.execute(
        select(
            Series.id,
            Series.workload,
            Series.params,
            Series.kernel,
            Series.unit,
            Series.fingerprint,
        )
        .where(
            Series.repository_id == repository_id,
            Series.metric == metric,
            Series.method != MEASURE_METHOD,
        )
        .order_by(Series.workload, Series.params_key, Series.kernel, Series.id)
        .limit(5000)
    ).all()
    return [SeriesOption(*row) for row in rows]


def series_rows(session: Session, ids: list[int]) -> list[Series]:
    return list(session.scalars(select(Series).where(Series.id.in_(ids)).order_by(Series.id)))


def recent_commits(session: Session, repository_id: int | None, limit: int = 10) -> list[str]:
    """Shas of the newest runs' commits, newest first, for the compare page's suggestions."""
    # The newest runs by primary key, deduplicated here: no GROUP BY over every run.
    query = (
        select(Commit.sha)
        .join(Run, Run.commit_id == Commit.id)
        .order_by(Run.id.desc())
        .limit(limit * 4)
    )
    if repository_id is not None:
        query = query.where(Run.repository_id == repository_id)
    return list(dict.fromkeys(session.scalars(query)))[:limit]


def newest_repository(session: Session) -> str | None:
    """The repository of the newest run (the trend page's default), else the first by name."""
    name = session.scalar(
        select(Repository.name)
        .join(Run, Run.repository_id == Repository.id)
        .order_by(Run.id.desc())
        .limit(1)
    )
    return name or session.scalar(select(Repository.name).order_by(Repository.name).limit(1))


def redefinitions(session: Session, series_ids: list[int], branch: str) -> list[Row[Any]]:
    """Where a chosen series took over from another on the branch (a workload redefined in
    place): its id, the retired series' id, and the commit (sha, time) of the takeover."""
    if not series_ids:
        return []
    return list(
        session.execute(
            select(
                Verdict.series_id,
                Verdict.redefined_from_series_id,
                Commit.sha,
                Commit.committed_at,
            )
            .join(Run, Run.id == Verdict.run_id)
            .join(Commit, Commit.id == Run.commit_id)
            .where(
                Verdict.series_id.in_(series_ids),
                Verdict.redefined_from_series_id.is_not(None),
                Run.branch == branch,
            )
            .order_by(Commit.committed_at)
        ).all()
    )

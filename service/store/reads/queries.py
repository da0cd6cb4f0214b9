"""The API routes' reads: small lookups and the lists they answer with (the routes write no SQL:
tests/test_architecture.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, inspect, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from service.core.errors import NotFound
from service.models import Commit, Job, Repository, Result, Run, Runner
from service.models.pull_request import PULL_PREFIX
from service.schemas.jobs import JobPublic

BRANCH_LIST = 50  # the branches a 404 for an unknown one names


def repository_named(session: Session, name: str) -> Repository:
    repo = session.scalars(select(Repository).where(Repository.name == name)).one_or_none()
    if repo is None:
        raise NotFound(f"no repository {name!r}; it is registered by its first push or run")
    return repo


def check_branch(session: Session, repository_id: int, repository: str, branch: str) -> None:
    """NotFound, naming the branches there are, where no run of the repository is on `branch`:
    a misspelt branch would otherwise read as an empty history."""
    known = select(Run.id).where(Run.repository_id == repository_id, Run.branch == branch)
    if session.scalar(known.limit(1)) is not None:
        return
    # Only on the way to a 404: the repository's part of the (repository, branch) index.
    names = session.scalars(
        select(Run.branch).where(Run.repository_id == repository_id).distinct().limit(1000)
    ).all()
    # A pull request's runs are on a branch of its own each (pull/<number>): counted, not named.
    branches = sorted(b for b in names if not b.startswith(PULL_PREFIX))
    pulls = len(names) - len(branches)
    named = ", ".join(branches[:BRANCH_LIST]) or "none"
    if len(branches) > BRANCH_LIST:
        named += f" and {len(branches) - BRANCH_LIST} more"
    if pulls:
        named += f"; and {pulls} pull request branch{'es' if pulls > 1 else ''} (pull/<number>)"
    raise NotFound(
        f"{repository} has no results on branch {branch!r}; its branches: {named}",
        branches=branches[:BRANCH_LIST],
    )


def jobs_public(session: Session, jobs: list[Job]) -> list[JobPublic]:
    repo_ids = {j.repository_id for j in jobs}
    runner_ids = {j.runner_id for j in jobs if j.runner_id is not None}
    repos = dict(
        session.execute(
            select(Repository.id, Repository.name).where(Repository.id.in_(repo_ids))
        ).all()
    )
    runners = dict(
        session.execute(select(Runner.id, Runner.name).where(Runner.id.in_(runner_ids))).all()
    )
    return [JobPublic.of(j, repos[j.repository_id], runners.get(j.runner_id or -1)) for j in jobs]


def run_named(session: Session, run_uuid: str) -> tuple[Run, str, str] | None:
    """A stored run by its id, its commit's sha and its repository's name; None where no run
    has that id."""
    row = session.execute(
        select(Run, Commit.sha, Repository.name)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Repository, Repository.id == Run.repository_id)
        .where(Run.run_uuid == run_uuid)
    ).one_or_none()
    return None if row is None else (row[0], row[1], row[2])


def result_count(session: Session, run_id: int) -> int:
    return session.scalar(select(func.count()).where(Result.run_id == run_id)) or 0


def newest_jobs(
    session: Session,
    limit: int,
    state: str | None = None,
    repository_id: int | None = None,
    sha_prefix: str | None = None,
) -> list[Job]:
    """Jobs, newest first, filtered by state, repository and a prefix of their commit's sha."""
    query = select(Job).order_by(Job.id.desc()).limit(limit)
    if state:
        query = query.where(Job.state == state)
    if repository_id is not None:
        query = query.where(Job.repository_id == repository_id)
    if sha_prefix:
        query = query.where(Job.commit_sha >= sha_prefix, Job.commit_sha < sha_prefix + "g")
    return list(session.scalars(query))


def runners_by_name(session: Session) -> list[Runner]:
    return list(session.scalars(select(Runner).order_by(Runner.name)))


def runner_by_token_hash(session: Session, digest: str) -> Runner | None:
    return session.scalars(select(Runner).where(Runner.token_hash == digest)).one_or_none()


def get(session: Session, model: Any, pk: int) -> Any:
    """One row by its primary key, or None."""
    return session.get(model, pk)


def runner_named(session: Session, name: str) -> Runner | None:
    return session.scalars(select(Runner).where(Runner.name == name)).one_or_none()


def repository_or_none(session: Session, name: str) -> Repository | None:
    return session.scalars(select(Repository).where(Repository.name == name)).one_or_none()


def first_repository(session: Session) -> Repository | None:
    return session.scalars(select(Repository).order_by(Repository.id)).first()


def queued_jobs(session: Session, kind: str, sha: str) -> int:
    """How many jobs of this kind wait for this commit."""
    return (
        session.scalar(
            select(func.count()).where(
                Job.kind == kind, Job.commit_sha == sha, Job.state == "queued"
            )
        )
        or 0
    )


def ping_engine(engine: Engine) -> tuple[str, str | None]:
    """One round trip to the database on a connection of `engine`: its dialect's name and the
    revision its schema is at (None: no kernelwatch schema)."""
    with engine.connect() as conn:
        try:
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except DBAPIError:
            # Only on this path the catalogue is read: no schema at all, or another failure
            # (a statement timeout) that the caller reports as such.
            conn.rollback()
            if "alembic_version" in inspect(conn).get_table_names():
                raise
            revision = None
    return engine.dialect.name, revision


def ping(session: Session) -> str:
    """One round trip to the database; its dialect's name."""
    session.execute(text("SELECT 1"))
    return session.get_bind().dialect.name

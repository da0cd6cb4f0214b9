"""Runs and commits listed for the API, newest first (what a client pages through before it
asks for one by id)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.models import Commit, Repository, Run


def newest_runs(
    session: Session,
    limit: int,
    repository_id: int | None = None,
    branch: str | None = None,
    sha_prefix: str | None = None,
    suite: str | None = None,
) -> list[tuple[Run, str, str]]:
    """(run, commit sha, repository name), newest received first."""
    query = (
        select(Run, Commit.sha, Repository.name)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Repository, Repository.id == Run.repository_id)
    )
    if repository_id is not None:
        query = query.where(Run.repository_id == repository_id)
    if branch is not None:
        query = query.where(Run.branch == branch)
    if suite is not None:
        query = query.where(Run.suite == suite)
    if sha_prefix is not None:
        query = query.where(Commit.sha.startswith(sha_prefix, autoescape=True))
    query = query.order_by(Run.received_at.desc(), Run.id.desc()).limit(limit)
    return [(run, sha, name) for run, sha, name in session.execute(query)]


def newest_commits(
    session: Session, limit: int, repository_id: int | None = None, branch: str | None = None
) -> list[dict[str, Any]]:
    """Commits that have runs (on `branch`), newest committed first, with how many runs and
    the branches they were measured on."""
    runs = select(Run.commit_id, Run.branch)
    if repository_id is not None:
        runs = runs.where(Run.repository_id == repository_id)
    if branch is not None:
        runs = runs.where(Run.branch == branch)
    measured = runs.subquery()
    counted = (
        select(measured.c.commit_id, func.count().label("runs"))
        .group_by(measured.c.commit_id)
        .subquery()
    )
    rows = session.execute(
        select(Commit, Repository.name, counted.c.runs)
        .join(counted, counted.c.commit_id == Commit.id)
        .join(Repository, Repository.id == Commit.repository_id)
        .order_by(Commit.committed_at.desc(), Commit.id.desc())
        .limit(limit)
    ).all()
    ids = [c.id for c, _, _ in rows]
    branches: dict[int, set[str]] = {i: set() for i in ids}
    if ids:
        for commit_id, name in session.execute(
            select(measured.c.commit_id, measured.c.branch)
            .where(measured.c.commit_id.in_(ids))
            .distinct()
        ):
            branches[commit_id].add(name)
    return [
        {
            "sha": c.sha,
            "repository": repository,
            "subject": (c.message or "").split("\n", 1)[0],
            "author_name": c.author_name,
            "committed_at": c.committed_at,
            "runs": count,
            "branches": sorted(branches[c.id]),
        }
        for c, repository, count in rows
    ]

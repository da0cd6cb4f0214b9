"""Small lookups several routes share."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.core.errors import NotFound
from service.models import Job, Repository, Runner
from service.schemas.jobs import JobPublic


def repository_named(session: Session, name: str) -> Repository:
    repo = session.scalars(select(Repository).where(Repository.name == name)).one_or_none()
    if repo is None:
        raise NotFound(f"no repository {name!r}; it is registered by its first push or run")
    return repo


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

"""What a stored run sets going besides its analysis: a pull request's run asks for a run of its
merge base on the target branch where there is none (service.store.jobs.pull_requests)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from service.store.jobs.pull_requests import queue_merge_base_of


def after_store(factory: sessionmaker[Session], run_pk: int, max_attempts: int) -> list[int]:
    """Jobs queued because of the stored run `run_pk` (none for a branch's own run)."""
    with factory() as session, session.begin():
        return queue_merge_base_of(session, run_pk, max_attempts)

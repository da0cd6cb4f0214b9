"""Store a validated result document in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import one_writer
from service.core.errors import DocumentConflict
from service.models import (
    BuildResource,
    Commit,
    Repository,
    Result,
    Run,
    Runner,
    RunWorkload,
)
from service.models.base import utcnow
from service.schemas.digest import document_digest, legacy_digest
from service.schemas.document import RunDocument
from service.store.history.lines import check_line, parent_columns
from service.store.history.workload_rows import (
    SummaryMismatch,
    drawn_ids,
    many,
    store_workloads,
    summarize_timings,
)
from service.store.upsert import find_or_insert

__all__ = ["IngestOutcome", "SummaryMismatch", "ingest"]


@dataclass(frozen=True)
class IngestOutcome:
    run_id: str
    stored: bool
    results: int
    detail: str | None = None
    pk: int | None = None  # the stored run's row, for its analysis
    # Runs put back on the analysis backlog by what arrived (a confirmation's finding is their
    # verdict now: service.evaluation.verdicts.confirmations).
    reopened: tuple[int, ...] = ()


def ingest(
    factory: sessionmaker[Session], doc: RunDocument, raw: Any, digest: str | None = None
) -> IngestOutcome:
    """Store `doc` in a transaction of its own; a second post of the same run id stores nothing
    and says so. (A runner's document is stored inside its job's transaction instead:
    service.runs.runner_results, with `stored_copy`, `store_new` and `stored_meanwhile`.)"""
    digest = digest or document_digest(raw)
    try:
        # One transaction from the check for an earlier copy to the last row: every statement
        # of it is a round trip to the database, and they bound the ingest rate.
        with one_writer(factory), factory() as session, session.begin():
            return stored_copy(session, doc.run_id, digest, raw) or store_new(session, doc, digest)
    except IntegrityError:
        existing = stored_meanwhile(factory, doc, raw, digest)
        if existing is None:
            raise
        return existing


def store_new(session: Session, doc: RunDocument, digest: str) -> IngestOutcome:
    """Write a document no run of the same id holds, in the caller's transaction."""
    pk, count = _store(session, doc, digest)
    return IngestOutcome(doc.run_id, stored=True, results=count, pk=pk)


def stored_meanwhile(
    factory: sessionmaker[Session], doc: RunDocument, raw: Any, digest: str
) -> IngestOutcome | None:
    """After an insert collided: the copy another request stored between our check and our
    insert (the same contents: nothing stored; other contents: DocumentConflict); None where
    there is none (the collision was another: the caller raises it again)."""
    with factory() as session:
        return stored_copy(session, doc.run_id, digest, raw)


def already_stored(factory: sessionmaker[Session], run_uuid: str) -> IngestOutcome | None:
    """The stored run of this id, whatever its contents (an import of a file seen before)."""
    with factory() as session:
        pk = session.scalar(select(Run.id).where(Run.run_uuid == run_uuid))
        if pk is None:
            return None
        count = session.scalar(select(func.count()).where(Result.run_id == pk)) or 0
    return IngestOutcome(run_uuid, stored=False, results=count)


def stored_copy(session: Session, run_uuid: str, digest: str, raw: Any) -> IngestOutcome | None:
    """The stored run of this id and these contents (nothing to store again); None where none
    is stored; DocumentConflict where one is, with other contents."""
    run = session.execute(
        select(Run.id, Run.document_sha256).where(Run.run_uuid == run_uuid)
    ).one_or_none()
    if run is None:
        return None
    if run.document_sha256 != digest and run.document_sha256 != legacy_digest(raw):
        raise DocumentConflict(
            f"run {run_uuid} is already stored with different contents; "
            "a new measurement needs a new run_id"
        )
    count = session.scalar(select(func.count()).where(Result.run_id == run.id)) or 0
    return IngestOutcome(run_uuid, stored=False, results=count)


def _store(session: Session, doc: RunDocument, digest: str) -> tuple[int, int]:
    # Core statements throughout: ORM objects would cost more than the rows they stand for.
    repository_id = find_or_insert(
        session,
        Repository,
        {"name": doc.repository.name},
        [Repository.id],
        clone_url=doc.repository.url,
        created_at=utcnow(),
    ).id
    timed = summarize_timings(doc, repository_id)
    c = doc.commit
    commit = find_or_insert(
        session,
        Commit,
        {"repository_id": repository_id, "sha": c.sha},
        [Commit.id, Commit.committed_at, Commit.ancestors, *parent_columns(repository_id, c)],
        insert_first=True,  # a run usually brings a commit the service has not seen
        parents=c.parents,
        author_name=c.author_name,
        author_email=c.author_email,
        message=c.message,
        committed_at=c.committed_at,
        ancestors=c.ancestors,
    )
    parent = (commit.parent_id is not None, commit.parent_ancestors) if c.ancestors else None
    check_line(session, repository_id, c, commit.ancestors or [], parent)
    if c.ancestors and len(c.ancestors) > len(commit.ancestors or []):
        session.execute(update(Commit).where(Commit.id == commit.id).values(ancestors=c.ancestors))
    runner_id = None
    if doc.runner is not None:
        runner_id = session.execute(
            update(Runner)
            .where(Runner.name == doc.runner.name)
            .values(last_seen_at=utcnow())
            .returning(Runner.id)
        ).scalar_one_or_none()
        if runner_id is None:
            runner_id = find_or_insert(
                session,
                Runner,
                {"name": doc.runner.name},
                [Runner.id],
                insert_first=True,  # not there a moment ago
                host=doc.runner.host,
                labels=doc.runner.labels,
                created_at=utcnow(),
                last_seen_at=utcnow(),
            ).id
    env = doc.environment
    workload_ids = drawn_ids(session, RunWorkload, len(doc.workloads))
    returning = [Run.id] if workload_ids is None else [Run.id, workload_ids]
    # Written first: on SQLite this takes the write lock that store_workloads relies on.
    stored = session.execute(
        insert(Run)
        .values(
            run_uuid=doc.run_id,
            document_sha256=digest,
            repository_id=repository_id,
            commit_id=commit.id,
            runner_id=runner_id,
            job_id=doc.job_id,
            suite=doc.suite,
            branch=doc.branch,
            status=doc.status,
            fingerprint=env.fingerprint,
            gpu_name=env.gpu.name,
            environment=env.model_dump(mode="json"),
            build_status=doc.build.status,
            build_seconds=doc.build.seconds,
            build_log_tail=doc.build.log_tail,
            log_tail=doc.log_tail,
            work_changes=doc.work_changes,
            pull_request=doc.pull_request.number if doc.pull_request else None,
            base_ref=doc.pull_request.base_ref if doc.pull_request else None,
            merge_base_sha=doc.pull_request.merge_base if doc.pull_request else None,
            started_at=doc.started_at,
            finished_at=doc.finished_at,
            received_at=utcnow(),
        )
        .returning(*returning)
    ).one()
    run_id = stored[0]
    ids = list(stored[1]) if workload_ids is not None else None
    many(session, BuildResource, [{"run_id": run_id, **k.model_dump()} for k in doc.build.kernels])
    results = store_workloads(session, doc, run_id, repository_id, commit, timed, ids)
    return run_id, results

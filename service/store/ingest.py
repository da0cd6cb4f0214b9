"""Store a validated result document in one transaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import one_writer
from service.models import (
    BuildResource,
    Commit,
    Repository,
    Result,
    Run,
    Runner,
)
from service.models.base import utcnow
from service.schemas.document import RunDocument
from service.store.upsert import get_or_create
from service.store.workload_rows import SummaryMismatch, store_workloads, summarize_timings

__all__ = ["DocumentConflict", "IngestOutcome", "SummaryMismatch", "ingest"]


class DocumentConflict(Exception):
    """The run id is stored already, with different contents."""


@dataclass(frozen=True)
class IngestOutcome:
    run_id: str
    stored: bool
    results: int
    detail: str | None = None
    pk: int | None = None  # the stored run's row, for its analysis


def document_digest(raw: Any) -> str:
    """SHA-256 of the document's canonical JSON; ValueError if it holds a NaN or an infinity.

    Writing every number anyway, the digest is where finding a non-finite one costs nothing."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def ingest(
    factory: sessionmaker[Session],
    doc: RunDocument,
    raw: Any,
    within: Callable[[Session], Callable[[Session], None]] | None = None,
    digest: str | None = None,
) -> IngestOutcome:
    """Store `doc`; a second post of the same run id stores nothing and says so.

    `within`, if given, runs first inside the storing transaction (to check a job's lease) and
    returns what to run after the rows are written (to close the job): all or nothing.
    """
    digest = digest or document_digest(raw)
    existing = _existing(factory, doc.run_id, digest)
    if existing is not None:
        return existing
    try:
        with one_writer(factory), factory() as session, session.begin():
            after = within(session) if within else None
            pk, count = _store(session, doc, digest)
            if after:
                after(session)
    except IntegrityError:
        # Another request stored the same run id between our check and our insert.
        existing = _existing(factory, doc.run_id, digest)
        if existing is None:
            raise
        return existing
    return IngestOutcome(doc.run_id, stored=True, results=count, pk=pk)


def _existing(factory: sessionmaker[Session], run_uuid: str, digest: str) -> IngestOutcome | None:
    with factory() as session:
        run = session.scalars(select(Run).where(Run.run_uuid == run_uuid)).one_or_none()
        if run is None:
            return None
        if run.document_sha256 != digest:
            raise DocumentConflict(
                f"run {run_uuid} is already stored with different contents; "
                "a new measurement needs a new run_id"
            )
        count = session.scalar(select(func.count()).where(Result.run_id == run.id)) or 0
        return IngestOutcome(run_uuid, stored=False, results=count)


def _store(session: Session, doc: RunDocument, digest: str) -> tuple[int, int]:
    repo = get_or_create(
        session,
        Repository,
        {"name": doc.repository.name},
        clone_url=doc.repository.url,
        created_at=utcnow(),
    )
    timed = summarize_timings(doc, repo.id)
    c = doc.commit
    commit = get_or_create(
        session,
        Commit,
        {"repository_id": repo.id, "sha": c.sha},
        parents=c.parents,
        author_name=c.author_name,
        author_email=c.author_email,
        message=c.message,
        committed_at=c.committed_at,
        ancestors=c.ancestors,
    )
    if c.ancestors and not commit.ancestors:
        commit.ancestors = c.ancestors
    runner_id = None
    if doc.runner is not None:
        runner = get_or_create(
            session,
            Runner,
            {"name": doc.runner.name},
            host=doc.runner.host,
            labels=doc.runner.labels,
            created_at=utcnow(),
        )
        runner.last_seen_at = utcnow()
        runner_id = runner.id
    env = doc.environment
    run = Run(
        run_uuid=doc.run_id,
        document_sha256=digest,
        repository_id=repo.id,
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
        started_at=doc.started_at,
        finished_at=doc.finished_at,
    )
    session.add(run)
    session.flush()
    if doc.build.kernels:
        session.execute(
            insert(BuildResource), [{"run_id": run.id, **k.model_dump()} for k in doc.build.kernels]
        )
    results = store_workloads(session, doc, run, repo.id, commit, timed)
    return run.id, results

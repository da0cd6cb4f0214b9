"""Documents posted by runners: accepted only under the job's current lease.

A run job's document is stored like any other; a confirmation or bisect job's document (head,
with the base measured interleaved in `paired_base`) decides its alerts and is not stored as a
run, so that re-measurements of old commits do not enter the series' histories.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import one_writer
from service.core.errors import Conflict, InvalidDocument
from service.evaluation.alerts import bisect
from service.evaluation.alerts.lifecycle import confirm
from service.evaluation.verdicts import confirmations
from service.evaluation.verdicts.paired_base import record_paired
from service.models import Job, Repository, Runner
from service.schemas.digest import document_digest
from service.schemas.document import RunDocument, RunnerIn
from service.store.history.ingest import IngestOutcome, store_new, stored_copy, stored_meanwhile
from service.store.history.workload_rows import summarize_timings
from service.store.jobs.queue import current_attempt, finish, job_kind
from service.store.reads import queries


def _leased_job(session: Session, doc: RunDocument, runner_id: int) -> tuple[Job, Runner]:
    if doc.job_id is None or not doc.lease_token:
        raise Conflict("a runner's document needs job_id and lease_token of its claim")
    runner = queries.get(session, Runner, runner_id)
    assert runner is not None
    if doc.runner is not None and doc.runner.name != runner.name:
        raise Conflict(
            f"the document names runner {doc.runner.name!r}, "
            f"but the token belongs to {runner.name!r}",
        )
    job = current_attempt(session, doc.job_id, doc.lease_token, runner)
    for field, fixed, posted in _fixed_by_job(session, job, doc):
        if fixed != posted:
            raise Conflict(f"job {job.id} is for {field} {fixed!r}, not {posted!r}")
    return job, runner


def _fixed_by_job(session: Session, job: Job, doc: RunDocument) -> list[tuple[str, Any, Any]]:
    """What the job fixed beside what the document says of it: a runner's token may post its
    job's measurements, never file them under another repository, branch, commit or pull
    request."""
    repository = queries.get(session, Repository, job.repository_id)
    pull = (job.payload or {}).get("pull_request") or {}
    posted = doc.pull_request
    return [
        ("repository", repository.name if repository else None, doc.repository.name),
        ("branch", job.branch, doc.branch),
        ("commit", job.commit_sha, doc.commit.sha),
        ("pull request", pull.get("number"), posted.number if posted else None),
        ("pull request base", pull.get("base_ref"), posted.base_ref if posted else None),
    ]


def _store_under_lease(
    factory: sessionmaker[Session], doc: RunDocument, raw: Any, runner_id: int, digest: str
) -> IngestOutcome:
    """One transaction: a copy stored already answers as such; else the job's lease is checked,
    the document stored and the job finished, all or nothing."""
    try:
        with one_writer(factory), factory() as session, session.begin():
            existing = stored_copy(session, doc.run_id, digest, raw)
            if existing is not None:
                return existing
            job, runner = _leased_job(session, doc, runner_id)
            if doc.runner is None:
                # The token says which runner this is; the document need not repeat it.
                doc.runner = RunnerIn(name=runner.name, host=runner.host, labels=runner.labels)
            outcome = store_new(session, doc, digest)
            if doc.paired_base is not None:  # its doubtful launches, timed against its base
                assert outcome.pk is not None
                record_paired(session, outcome.pk, doc)
            finish(session, job, succeeded=True)
            return outcome
    except IntegrityError:
        existing = stored_meanwhile(factory, doc, raw, digest)
        if existing is None:
            raise
        return existing


def store_runner_document(
    factory: sessionmaker[Session],
    doc: RunDocument,
    raw: Any,
    runner_id: int,
    digest: str | None = None,
) -> IngestOutcome:
    with factory() as session:
        kind = job_kind(session, doc.job_id) if doc.job_id else None
    if kind in ("confirm", "bisect"):
        return _apply_confirmation(factory, doc, runner_id, kind)
    return _store_under_lease(factory, doc, raw, runner_id, digest or document_digest(raw))


def _apply_confirmation(
    factory: sessionmaker[Session], doc: RunDocument, runner_id: int, kind: str
) -> IngestOutcome:
    what = "confirmation" if kind == "confirm" else "bisect"
    if doc.paired_base is None:
        raise InvalidDocument(
            f"a {what} job's document needs paired_base "
            "(the base commit measured interleaved with the head)"
        )
    # Not stored, but judged: its numbers must hold in microseconds as a stored run's do.
    summarize_timings(doc, 0)
    try:
        summarize_timings(doc.paired_base, 0)
    except InvalidDocument as exc:
        raise InvalidDocument(f"paired_base.{exc}") from exc
    with factory() as session, session.begin():
        job, runner = _leased_job(session, doc, runner_id)
        if doc.paired_base.commit.sha != job.payload.get("base_sha"):
            raise Conflict(
                f"job {job.id} measures against {job.payload.get('base_sha')}, "
                f"not {doc.paired_base.commit.sha}",
            )
        actor = f"runner {runner.name}"
        if kind == "bisect":
            alerts = bisect.apply(session, job, doc, actor)
            states = ", ".join(f"alert {a.id} {a.bisect.get('state')}" for a in alerts)
        else:
            alerts = confirm(
                session,
                job,
                doc.model_dump(mode="json"),
                doc.paired_base.model_dump(mode="json"),
                actor=actor,
            )
            states = ", ".join(f"alert {a.id} {a.state}" for a in alerts)
        reopened = tuple(confirmations.runs_of_job(session, job)) if kind == "confirm" else ()
        finish(session, job, succeeded=True)
    return IngestOutcome(
        doc.run_id, stored=True, results=0, detail=f"{what}: {states}", reopened=reopened
    )

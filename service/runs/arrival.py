"""A result document arrives over the API: validated, stored, then what a stored run sets going.

The one place that decides what happens to a posted run, in this order: the document is
validated (the route answers a pydantic error as 422); stored, as the admin's or under the job
lease of the runner that sends it (runner_results); a pull request's run asks for its merge
base (follow_up); and, where the service judges in the request, judged at once (otherwise the
analysis worker claims it). The route answers with the outcome and, after answering, reports a
judged run to GitHub and wakes the analysis worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from anyio.to_thread import run_sync
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.core import clone_urls, failpoints
from service.core.db import one_writer
from service.core.settings import Settings
from service.evaluation.backlog import analyse_run
from service.evaluation.verdicts.paired_base import record_paired
from service.runs.follow_up import after_store
from service.runs.runner_results import store_runner_document
from service.schemas.document import RunDocument
from service.store.history.ingest import (
    IngestOutcome,
    ingest,
    store_new,
    stored_copy,
    stored_meanwhile,
)


@dataclass(frozen=True)
class Arrival:
    outcome: IngestOutcome
    # The runs judged in the request, by this process, which reports their verdicts itself:
    # this one first, then those its arrival decided again (a pending verdict it settled).
    judged: list[str]


async def receive(
    factory: sessionmaker[Session],
    settings: Settings,
    raw: Any,
    digest: str,
    runner_id: int | None,
) -> Arrival:
    """Validate, store and (where the settings say so) judge one posted document; a runner's
    (`runner_id`) only under its job's lease. Raises pydantic's ValidationError, and the
    domain's errors (service.core.errors: DocumentConflict, InvalidDocument, ...)."""
    doc = RunDocument.model_validate(raw)
    if clone_urls.refusal(doc.repository.url, settings):
        # A document's repository URL becomes a new repository's clone URL: not one that this
        # deployment's runners may not be handed (the measurements are kept all the same).
        doc.repository.url = None
    if runner_id is None:
        stored = partial(_store_posted, factory, doc, raw, digest)
        outcome = await run_sync(stored)
    else:
        outcome = await run_sync(store_runner_document, factory, doc, raw, runner_id, digest)
    if outcome.reopened:  # a confirmation: what it found is the verdicts of the runs it was for
        judged: list[str] = []
        if settings.analyse_in_request:
            for pk in outcome.reopened:
                judged += await run_sync(analyse_run, factory, pk)
        return Arrival(outcome, judged)
    if not outcome.stored or outcome.pk is None:
        return Arrival(outcome, judged=[])
    await failpoints.pause("after_store")  # stored, not yet answered: see core.failpoints
    if doc.pull_request is not None:  # a branch's own run sets nothing else going
        await run_sync(after_store, factory, outcome.pk, settings.max_attempts)
    judged = []
    if settings.analyse_in_request:
        # Empty: the background worker claimed the run first, and it reports it itself.
        judged = await run_sync(analyse_run, factory, outcome.pk)
    return Arrival(outcome, judged)


def _store_posted(
    factory: sessionmaker[Session], doc: RunDocument, raw: Any, digest: str
) -> IngestOutcome:
    """A document posted with no lease stored (store.history.ingest); one that carries its
    own doubtful launches timed against its base (runner.run.paired) has that finding kept
    as its confirmations in the same transaction, before any analysis can see the run."""
    if doc.paired_base is None:
        return ingest(factory, doc, raw, digest=digest)
    try:
        with one_writer(factory), factory() as session, session.begin():
            existing = stored_copy(session, doc.run_id, digest, raw)
            if existing is not None:
                return existing
            outcome = store_new(session, doc, digest)
            assert outcome.pk is not None
            record_paired(session, outcome.pk, doc)
            return outcome
    except IntegrityError:
        existing = stored_meanwhile(factory, doc, raw, digest)
        if existing is None:
            raise
        return existing

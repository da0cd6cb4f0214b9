"""Another tool's output arrives: read it, make it a result document, and store and judge that
as any runner's document (service.store.history.ingest, then service.evaluation.backlog)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from service.evaluation.backlog import analyse_run
from service.runs.imports import ImportedFile, ImportFileError
from service.runs.imports.document import run_id, to_document
from service.runs.imports.formats import FORMATS
from service.schemas.document import RunDocument
from service.schemas.imports import ImportCreate
from service.schemas.text import unstorable_number
from service.store.history.ingest import IngestOutcome, already_stored, ingest


def read(target: ImportCreate, data: bytes, samples: Mapping[str, bytes] | None) -> ImportedFile:
    """The file's series; ImportFileError where it is not what `target.format` says."""
    return FORMATS[target.format].read(data, samples)


def document(
    target: ImportCreate, data: bytes, samples: Mapping[str, bytes] | None = None
) -> tuple[RunDocument, dict]:
    """The checked result document of an imported file; nothing is stored yet."""
    imported = read(target, data, samples)
    if not imported.series:
        raise ImportFileError("the file holds no benchmarks")
    raw = to_document(
        imported,
        run=run_id(target.format, data, target.repository, target.commit, target.branch),
        repository=target.repository,
        commit=target.commit,
        branch=target.branch,
        committed_at=target.committed_at,
    )
    if wide := unstorable_number(raw):
        raise ImportFileError(f"the file's results cannot be stored: {wide}")
    try:
        return RunDocument.model_validate(raw), raw
    except ValidationError as exc:
        bad = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ImportFileError(f"the file's results cannot be stored: {bad}") from None


def store(
    factory: sessionmaker[Session], doc: RunDocument, raw: dict, analyse: bool = True
) -> IngestOutcome:
    """Store an imported document as one run (once: the same file again stores nothing) and,
    with `analyse`, judge it now rather than on the backlog's next pass."""
    # The same file for the same commit: its run id again, with other times where the file
    # gives none (they default to now), which is no new measurement.
    outcome = already_stored(factory, doc.run_id) or ingest(factory, doc, raw)
    if analyse and outcome.stored and outcome.pk is not None:
        analyse_run(factory, outcome.pk)
    return outcome


def import_file(
    factory: sessionmaker[Session],
    target: ImportCreate,
    data: bytes,
    samples: Mapping[str, bytes] | None = None,
    analyse: bool = True,
) -> IngestOutcome:
    """Read, check and store one file of `target.format` as a run of `target.commit`."""
    doc, raw = document(target, data, samples)
    return store(factory, doc, raw, analyse)

"""Storing a result document (service.store.history.ingest), on SQLite and PostgreSQL: one run
row with its results, the same document again stores nothing and says how many results the
stored copy has (also a copy stored under the digest older versions computed), other contents
under the same run id are a conflict that changes nothing; the runner a document names is made
once and seen again; a commit's stored line grows to the longest one sent, never shrinks; and
the build's kernels are kept with the run."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import DocumentConflict
from service.models import BuildResource, Commit, Result, Run, Runner
from service.schemas.digest import document_digest, legacy_digest
from service.schemas.document import RunDocument
from service.store.history.ingest import already_stored, ingest, stored_meanwhile
from tests.documents import document, sha_for
from tests.service.store.conftest import Store


def post(factory: sessionmaker[Session], raw: dict[str, Any]) -> Any:
    return ingest(factory, RunDocument.model_validate(raw), raw)


def count(factory: sessionmaker[Session], model: type) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def test_a_document_is_stored_once_and_posted_again_stores_nothing(
    factory: sessionmaker[Session],
) -> None:
    raw = document(commit="c0", run_id="run-0001", medians={"a": 100.0, "b": 20.0})
    first = post(factory, raw)
    assert (first.run_id, first.stored, first.results) == ("run-0001", True, 2)
    with factory() as session:
        run = session.get(Run, first.pk)
        assert (run.run_uuid, run.document_sha256) == ("run-0001", document_digest(raw))
    again = post(factory, copy.deepcopy(raw))
    assert (again.stored, again.results, again.pk) == (False, 2, None)
    assert (count(factory, Run), count(factory, Result)) == (1, 2)


def test_a_copy_stored_under_the_older_digest_is_still_the_same_document(
    factory: sessionmaker[Session],
) -> None:
    raw = document(commit="c0", run_id="run-0001")
    stored = post(factory, raw)
    with factory() as session, session.begin():
        session.execute(
            update(Run).where(Run.id == stored.pk).values(document_sha256=legacy_digest(raw))
        )
    assert post(factory, raw).stored is False


def test_other_contents_under_a_stored_run_id_are_a_conflict(
    factory: sessionmaker[Session],
) -> None:
    post(factory, document(commit="c0", run_id="run-0001", medians={"k": 100.0}))
    other = document(commit="c0", run_id="run-0001", medians={"k": 130.0})
    with pytest.raises(DocumentConflict, match="run run-0001 is already stored"):
        post(factory, other)
    with factory() as session:
        assert session.scalars(select(Result.median)).one() == pytest.approx(100.0, rel=0.01)


def test_a_stored_run_is_found_by_its_id_whatever_its_contents(
    factory: sessionmaker[Session],
) -> None:
    raw = document(commit="c0", run_id="run-0001", medians={"a": 1.0, "b": 2.0, "c": 3.0})
    post(factory, raw)
    found = already_stored(factory, "run-0001")
    assert found is not None and (found.stored, found.results) == (False, 3)
    assert already_stored(factory, "run-0002") is None
    # After a collision: the same contents are the copy another request stored meanwhile.
    parsed = RunDocument.model_validate(raw)
    meanwhile = stored_meanwhile(factory, parsed, raw, document_digest(raw))
    assert meanwhile is not None and meanwhile.results == 3
    other = RunDocument.model_validate({**raw, "run_id": "run-0002"})
    assert stored_meanwhile(factory, other, raw, document_digest(raw)) is None


def test_the_documents_runner_is_made_once_and_seen_again(
    factory: sessionmaker[Session], store: Store
) -> None:
    first = document(commit="c0")
    first["runner"] = {"name": "h100-b", "host": "gpu-7", "labels": {"gpu": "h100"}}
    store(first)
    with factory() as session:
        made = session.scalars(select(Runner)).one()
    second = document(commit="c1", minutes=1)
    second["runner"] = {"name": "h100-b", "host": "elsewhere", "labels": {}}
    store(second)
    with factory() as session:
        seen = session.scalars(select(Runner)).one()
        runner_ids = set(session.scalars(select(Run.runner_id)))
    assert (made.host, made.labels) == ("gpu-7", {"gpu": "h100"})
    # Seen again: only its time moves (an admin's labels are not a document's to change).
    assert (seen.id, seen.host, seen.labels) == (made.id, "gpu-7", {"gpu": "h100"})
    assert seen.last_seen_at > made.last_seen_at
    assert runner_ids == {made.id}


def test_a_commits_stored_line_grows_to_the_longest_sent_and_never_shrinks(
    factory: sessionmaker[Session], store: Store
) -> None:
    def stored_line() -> list[str]:
        with factory() as session:
            return session.scalar(select(Commit.ancestors).where(Commit.sha == sha_for("c3")))

    # A runner that caps the line sends the nearest ancestors only.
    store(document(commit="c3", parents=["c2"], ancestors=["c2"]))
    store(document(commit="c3", parents=["c2"], ancestors=["c2", "c1", "c0"]))
    assert stored_line() == [sha_for("c2"), sha_for("c1"), sha_for("c0")]
    store(document(commit="c3", parents=["c2"], ancestors=["c2", "c1"]))
    assert stored_line() == [sha_for("c2"), sha_for("c1"), sha_for("c0")]
    assert count(factory, Commit) == 1


def test_the_builds_kernels_are_kept_with_the_run(
    factory: sessionmaker[Session], store: Store
) -> None:
    raw = document(commit="c0")
    raw["build"]["kernels"] = [
        {"kernel": "gemm", "arch": "sm_90", "registers": 96, "shared_bytes": 16896,
         "spill_stores_bytes": 0, "spill_loads_bytes": 8},
    ]  # fmt: skip
    run_id = store(raw)
    with factory() as session:
        kept = session.scalars(select(BuildResource)).one()
    assert (kept.run_id, kept.kernel, kept.registers, kept.spill_loads_bytes) == (
        run_id,
        "gemm",
        96,
        8,
    )

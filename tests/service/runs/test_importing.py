"""service.runs.importing: another tool's file made a result document, stored once and judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.models import Commit, Run, Verdict
from service.runs import importing
from service.runs.imports import ImportFileError
from service.schemas.imports import ImportCreate

GBENCH = Path(__file__).parent / "fixtures" / "gbench"
BASE_FILE = (GBENCH / "saxpy_base.json").read_bytes()
REPO, BASE, HEAD = "acme/kernels", "a" * 40, "b" * 40
TARGET = ImportCreate(format="gbench", repository=REPO, commit=BASE,
                      committed_at="2026-11-01T10:00:00Z")  # fmt: skip


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def gbench(*names: str) -> bytes:
    """A Google Benchmark file of the fixture's host with one repetition of each benchmark."""
    context = json.loads(BASE_FILE)["context"]
    entries = [{"name": n, "run_name": n, "run_type": "iteration", "repetitions": 1,
                "repetition_index": 0, "threads": 1, "iterations": 100, "real_time": 2500.0,
                "cpu_time": 2400.0, "time_unit": "ns"} for n in names]  # fmt: skip
    return json.dumps({"context": context, "benchmarks": entries}).encode()


def runs(factory: sessionmaker[Session]) -> list[Any]:
    with factory() as session:
        return list(session.execute(select(Run.run_uuid, Run.analysed_at).order_by(Run.id)))


def test_a_file_becomes_the_document_of_its_commit(factory: sessionmaker[Session]) -> None:
    doc, raw = importing.document(TARGET, BASE_FILE)
    assert raw["run_id"] == doc.run_id and doc.run_id.startswith("import-gbench-")
    assert (doc.suite, doc.repository.name, doc.branch, doc.commit.sha) == (
        "gbench:bench_saxpy", REPO, "main", BASE)  # fmt: skip
    assert doc.commit.committed_at.isoformat() == "2026-11-01T10:00:00+00:00"
    assert [(w.name, w.params, w.status) for w in doc.workloads] == [
        ("BM_saxpy", {"arg0": 4096}, "ok"),
        ("BM_saxpy", {"arg0": 262144}, "ok"),
        ("BM_sum_float_", {"size": 65536}, "ok"),
        ("BM_sum_double_", {"size": 65536, "threads": 2}, "ok"),
        ("BM_fails", {}, "failed"),
        ("BM_not_here", {}, "skipped"),
    ]
    assert runs(factory) == []  # a document only: nothing stored yet


def test_the_same_file_for_another_commit_is_another_run() -> None:
    first, _ = importing.document(TARGET, BASE_FILE)
    again, _ = importing.document(TARGET, BASE_FILE)
    other, _ = importing.document(TARGET.model_copy(update={"commit": HEAD}), BASE_FILE)
    assert first.run_id == again.run_id != other.run_id


def test_a_file_of_another_format_is_refused() -> None:
    with pytest.raises(ImportFileError, match="not Google Benchmark JSON output: no 'context'"):
        importing.document(TARGET, b'{"benchmarks": []}')


def test_a_file_without_benchmarks_is_refused() -> None:
    with pytest.raises(ImportFileError, match=r"^the file holds no benchmarks$"):
        importing.document(TARGET, gbench())


def test_a_number_beyond_64_bits_is_refused_naming_where() -> None:
    with pytest.raises(ImportFileError) as refused:
        importing.document(TARGET, gbench("BM_x/99999999999999999999"))
    assert str(refused.value) == ("the file's results cannot be stored: "
                                  "$.workloads[0].params.arg0: an integer beyond 64 bits "
                                  "(20 digits)")  # fmt: skip


def test_a_result_the_document_cannot_hold_is_refused_naming_the_field() -> None:
    with pytest.raises(ImportFileError) as refused:
        importing.document(TARGET, gbench("BM_x/é:1"))
    assert str(refused.value).startswith(
        "the file's results cannot be stored: workloads.0.kernels.0: String should match pattern"
    )


def test_an_import_is_stored_and_judged(factory: sessionmaker[Session]) -> None:
    outcome = importing.import_file(factory, TARGET, BASE_FILE)
    assert (outcome.stored, outcome.results) == (True, 4)  # the failed and skipped: no timing
    ((run_uuid, analysed_at),) = runs(factory)
    assert run_uuid == outcome.run_id and analysed_at is not None
    with factory() as session:
        verdicts = session.scalars(select(Verdict.verdict)).all()
        commit = session.scalars(select(Commit.sha)).one()
    assert commit == BASE
    assert "new" in verdicts


def test_an_import_left_to_the_backlog_is_stored_unjudged(factory: sessionmaker[Session]) -> None:
    outcome = importing.import_file(factory, TARGET, BASE_FILE, analyse=False)
    assert outcome.stored
    ((_, analysed_at),) = runs(factory)
    assert analysed_at is None


def test_the_same_file_again_stores_nothing(factory: sessionmaker[Session]) -> None:
    importing.import_file(factory, TARGET, BASE_FILE)
    # Imported again without a commit time: the document differs (its times are now), the
    # measurement does not.
    again = importing.import_file(factory, TARGET.model_copy(update={"committed_at": None}),
                                  BASE_FILE)  # fmt: skip
    assert (again.stored, again.results) == (False, 4)
    assert len(runs(factory)) == 1


def test_a_bad_file_stores_nothing(factory: sessionmaker[Session]) -> None:
    with pytest.raises(ImportFileError):
        importing.import_file(factory, TARGET, gbench("BM_x/99999999999999999999"))
    assert runs(factory) == []

"""Fixtures of the store's tests: a session factory on the test's database, and documents stored
through the service's own ingest (then, where a test asks, judged by its own analysis), so that
each test reads rows written the way a posted run writes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.evaluation.backlog import analyse_run
from service.schemas.document import RunDocument
from service.store.history.ingest import ingest
from tests.documents import document

Store = Callable[..., int]
StoreLine = Callable[..., list[int]]


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


@pytest.fixture
def store(factory: sessionmaker[Session]) -> Store:
    """`store(doc, analyse=False)`: the stored run's row id."""

    def stored(doc: dict[str, Any], *, analyse: bool = False) -> int:
        outcome = ingest(factory, RunDocument.model_validate(doc), doc)
        assert outcome.stored and outcome.pk is not None, outcome
        if analyse:
            analyse_run(factory, outcome.pk)
        return outcome.pk

    return stored


@pytest.fixture
def store_line(store: Store) -> StoreLine:
    """`store_line(levels, analyse=False, prefix="c", **document_kw)`: commits c0, c1, ... on
    one first-parent line, commit i measured at the medians `levels[i]` (kernel -> us, one
    gemm_fwd workload each); the runs' row ids."""

    def stored(
        levels: list[dict[str, float]], *, analyse: bool = False, prefix: str = "c", **kw: Any
    ) -> list[int]:
        labels: list[str] = []
        pks = []
        for i, medians in enumerate(levels):
            label = f"{prefix}{i}"
            doc = document(commit=label, parents=labels[-1:], ancestors=labels[::-1],
                           minutes=i, medians=medians, seed=i, **kw)  # fmt: skip
            pks.append(store(doc, analyse=analyse))
            labels.append(label)
        return pks

    return stored

"""The domain errors of service/core/errors.py: each keeps the words a person acts on and the
extras that go beside them, `within` leads those words with what was being done while keeping
the kind, the extras and the original as its cause, and the kinds nest so that a handler of a
broad kind (a conflict, an unprocessable input) also answers its narrower ones."""

from __future__ import annotations

import pytest

from service.core.errors import (
    Conflict,
    DocumentConflict,
    DomainError,
    InvalidDocument,
    InvalidReference,
    NotFound,
    Unprocessable,
)


def test_the_detail_is_the_message_and_extras_are_kept_apart() -> None:
    error = InvalidReference("sha abc12 is ambiguous", candidates=["abc123", "abc124"])
    assert str(error) == error.detail == "sha abc12 is ambiguous"
    assert error.extra == {"candidates": ["abc123", "abc124"]}


def test_within_leads_the_detail_with_its_context_and_keeps_the_kind() -> None:
    inner = InvalidDocument("commit.ancestors: disagrees with the stored line", field="commit")
    outer = inner.within("invalid document")
    assert type(outer) is InvalidDocument
    assert outer.detail == "invalid document: commit.ancestors: disagrees with the stored line"
    assert str(outer) == outer.detail
    assert outer.extra == {"field": "commit"}
    # The original stays as the cause (a traceback shows both) and is not changed.
    assert outer.__cause__ is inner
    assert inner.detail == "commit.ancestors: disagrees with the stored line"


def test_within_nests_one_context_after_another() -> None:
    error = NotFound("no run r1").within("compare").within("GET /compare")
    assert error.detail == "GET /compare: compare: no run r1"
    assert isinstance(error.__cause__, NotFound)
    assert error.__cause__.detail == "compare: no run r1"


@pytest.mark.parametrize(
    ("narrow", "broad"),
    [(DocumentConflict, Conflict), (InvalidDocument, Unprocessable)],
)
def test_a_narrow_kind_is_caught_as_its_broad_kind(
    narrow: type[DomainError], broad: type[DomainError]
) -> None:
    with pytest.raises(broad) as caught:
        raise narrow("run r1 is stored with other contents")
    assert type(caught.value) is narrow


@pytest.mark.parametrize("kind", [NotFound, Conflict, Unprocessable, InvalidReference])
def test_the_broad_kinds_are_distinct_domain_errors(kind: type[DomainError]) -> None:
    # A not-found must never be answered as a conflict: no broad kind derives from another.
    others = {NotFound, Conflict, Unprocessable, InvalidReference} - {kind}
    assert issubclass(kind, DomainError)
    assert not any(issubclass(kind, other) for other in others)

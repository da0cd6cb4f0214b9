"""Non-finite numbers anywhere in a document are refused and named; digests are canonical."""

from __future__ import annotations

import json

import pytest

from service.api.body import parse_document
from service.core.errors import Unprocessable
from service.schemas.digest import document_digest, legacy_digest
from service.schemas.document import find_non_finite

NON_FINITE = [
    (b'{"a": NaN}', "a"),
    (b'{"params": {"x": [1, Infinity]}}', "params.x[1]"),
    (b"[-Infinity]", "[0]"),
    (b"[1e999]", "[0]"),
    (b"[1E+400]", "[0]"),
    (b"[" + b"1" * 250 + b"e60]", "[0]"),  # a 2-digit exponent, overflowing through its digits
    (b'{"w": [0.5, ' + b"9" * 400 + b".0]}", "w[1]"),
]


@pytest.mark.parametrize(("text", "where"), NON_FINITE)
def test_every_non_finite_number_is_refused_and_named(text: bytes, where: str) -> None:
    with pytest.raises(Unprocessable) as refused:  # answered 422
        parse_document(text)
    assert f"invalid document: {where}: NaN and infinities" in refused.value.detail
    raw = json.loads(text)
    assert find_non_finite(raw) == where
    with pytest.raises(ValueError):
        legacy_digest(raw)


def test_finite_documents_digest_the_same_whatever_their_layout() -> None:
    doc = {"b": [1.5, 2e300, -3, "é"], "a": {"sha": "651aaed5ca1ed7e61585a6e0", "n": 1e-300}}
    spaced = json.dumps(doc, indent=2).encode()
    reordered = json.dumps(dict(reversed(list(doc.items()))), ensure_ascii=False).encode()
    digests = {parse_document(body)[1] for body in (json.dumps(doc).encode(), spaced, reordered)}
    assert digests == {document_digest(doc)}
    changed = json.dumps({**doc, "b": [1.5, 2e300, -3, "e"]}).encode()
    assert parse_document(changed)[1] != document_digest(doc)


def test_integers_beyond_64_bits_are_digested_exactly() -> None:
    big = {"n": 2**70}
    assert document_digest(big) == legacy_digest(big)
    assert document_digest(big) != document_digest({"n": 2**70 + 1})

"""Non-finite numbers anywhere in a document are found while it is digested, and named."""

from __future__ import annotations

import json

import pytest

from service.schemas.document import find_non_finite
from service.store.ingest import document_digest

NON_FINITE = [
    b'{"a": NaN}',
    b'{"params": {"x": [1, Infinity]}}',
    b"[-Infinity]",
    b"[1e999]",
    b"[1E+400]",
    b"[" + b"1" * 250 + b"e60]",  # a 2-digit exponent, overflowing through its digits
    b"[" + b"9" * 400 + b".0]",
]


@pytest.mark.parametrize("text", NON_FINITE)
def test_every_non_finite_number_stops_the_digest_and_is_named(text: bytes) -> None:
    raw = json.loads(text)
    with pytest.raises(ValueError):
        document_digest(raw)
    assert find_non_finite(raw) is not None


def test_finite_documents_digest_the_same_whatever_their_layout() -> None:
    doc = {"b": [1.5, 2e300, -3], "a": {"sha": "651aaed5ca1ed7e61585a6e0", "n": 1e-300}}
    spaced = json.loads(json.dumps(doc, indent=2))
    reordered = json.loads(json.dumps(dict(reversed(list(doc.items())))))
    assert document_digest(doc) == document_digest(spaced) == document_digest(reordered)
    assert find_non_finite(doc) is None

"""A result document's identity, as service/schemas/digest.py computes it: the SHA-256 of its
canonical JSON (keys sorted at every depth, no spaces), so that the same document posted again
has the same digest however it is laid out; the json module's digest that runs stored before
orjson carry, which refuses NaN and infinities; and the fall-back to it for integers beyond 64
bits."""

from __future__ import annotations

import hashlib

import pytest

from service.schemas.digest import document_digest, legacy_digest


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_digest_is_the_sha256_of_the_sorted_compact_json() -> None:
    doc = {"run_id": "r-000001", "a": {"z": [1, 2], "b": None, "t": True}}
    canonical = '{"a":{"b":null,"t":true,"z":[1,2]},"run_id":"r-000001"}'
    assert document_digest(doc) == sha256(canonical)


def test_the_order_of_keys_at_any_depth_does_not_change_the_digest() -> None:
    one = {"x": {"p": 1, "q": [{"m": 1, "n": 2}]}, "y": "é"}
    other = {"y": "é", "x": {"q": [{"n": 2, "m": 1}], "p": 1}}
    assert document_digest(one) == document_digest(other)


def test_the_order_of_a_list_does_change_it() -> None:
    # A list is data (samples, ancestors nearest first), not a set.
    assert document_digest({"s": [1.0, 2.0]}) != document_digest({"s": [2.0, 1.0]})


def test_text_beyond_ascii_is_digested_as_utf8() -> None:
    assert document_digest({"m": "é"}) == sha256('{"m":"é"}')


def test_the_legacy_digest_is_the_json_modules_canonical_form() -> None:
    # json.dumps escapes beyond ASCII: "é" is written \u00e9, unlike orjson.
    assert legacy_digest({"m": "é", "a": 1}) == sha256('{"a":1,"m":"\\u00e9"}')
    assert legacy_digest({"m": "é"}) != document_digest({"m": "é"})


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_the_legacy_digest_refuses_nan_and_infinities(number: float) -> None:
    with pytest.raises(ValueError):
        legacy_digest({"samples": [1.0, number]})


@pytest.mark.parametrize("big", [2**64, -(2**63) - 1, 10**40])
def test_integers_orjson_cannot_write_are_digested_by_the_json_module(big: int) -> None:
    doc = {"params": {"n": big}}
    assert document_digest(doc) == legacy_digest(doc)
    assert document_digest(doc) == sha256(f'{{"params":{{"n":{big}}}}}')

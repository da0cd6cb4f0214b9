"""What no database can store, as service/schemas/text.py finds it in parsed JSON: NUL
characters and lone surrogates in strings or keys, integers beyond 64 bits (signed or
unsigned), NaN and infinities, each found at its first place with a path ($ the root) and the
reason; the cheap test of a raw body that rules most bodies out; and request models built on
StorableText refusing such a body with a message that says where."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from service.schemas.text import (
    LARGEST_INTEGER,
    SMALLEST_INTEGER,
    StorableText,
    may_hold_unstorable,
    non_finite,
    unstorable_number,
    unstorable_text,
)


class Note(StorableText):
    text: str
    facts: dict[str, object] = Field(default_factory=dict)


@pytest.mark.parametrize(
    "body", [rb'{"a": "\u0000"}', rb'["\ud800"]', rb'{"\uDFFF": 1}', rb'{"e": "\ud83d\ude00"}']
)
def test_a_body_with_an_escaped_nul_or_surrogate_may_hold_unstorable_text(body: bytes) -> None:
    assert may_hold_unstorable(body)


@pytest.mark.parametrize(
    "body", [rb'{"a": "\u00e9\u0001"}', '{"a": "é😀 \x7f"}'.encode(), rb'{"u0000": 0}', b"[0]"]
)
def test_a_body_without_such_escapes_needs_no_closer_look(body: bytes) -> None:
    # False must be certain: the parsed body is then never walked for unstorable text.
    assert not may_hold_unstorable(body)


def test_a_nul_is_found_with_its_path() -> None:
    assert unstorable_text({"a": ["ok", "b\x00c"]}) == "$.a[1]: a NUL character"


def test_a_lone_surrogate_is_not_utf8() -> None:
    assert unstorable_text(["x", {"k": "\ud800"}]) == "$[1].k: a lone surrogate (not UTF-8)"


def test_a_key_that_cannot_be_stored_is_named_at_its_object() -> None:
    assert unstorable_text({"w": {"bad\x00key": 1}}) == "$.w: a key holds a NUL character"


def test_storable_text_and_non_strings_say_nothing() -> None:
    assert unstorable_text({"é": "😀", "n": 1, "none": None, "l": [1.5, True]}) is None


def test_the_first_unstorable_text_is_named_in_document_order() -> None:
    assert unstorable_text({"a": "ok", "b": "\x00", "c": "\ud800"}) == "$.b: a NUL character"


@pytest.mark.parametrize("value", [LARGEST_INTEGER, SMALLEST_INTEGER, 2**63, -1, 0, 10**19])
def test_signed_and_unsigned_64_bit_integers_are_storable(value: int) -> None:
    assert unstorable_number({"n": value}) is None


def test_the_bounds_are_those_of_64_bits() -> None:
    assert (SMALLEST_INTEGER, LARGEST_INTEGER) == (-9223372036854775808, 18446744073709551615)


def test_an_integer_beyond_64_bits_is_found_with_its_length() -> None:
    # 2**64 = 18446744073709551616: 20 digits; -(2**63) - 1 has 19.
    assert unstorable_number({"n": [1, 2**64]}) == "$.n[1]: an integer beyond 64 bits (20 digits)"
    assert unstorable_number([-(2**63) - 1]) == "$[0]: an integer beyond 64 bits (19 digits)"


def test_a_wide_float_or_a_boolean_is_no_wide_integer() -> None:
    assert unstorable_number({"f": 1e300, "b": True}) is None


def test_nan_and_infinities_are_found_where_they_are() -> None:
    assert non_finite({"a": 1.0, "b": [0.5, float("-inf")]}) == "$.b[1]"
    assert non_finite(float("nan")) == "$"
    assert non_finite({"a": 1e308, "b": 10**400}) is None  # a huge integer is still a number


def test_a_storable_body_is_accepted_as_sent() -> None:
    note = Note.model_validate({"text": "é 😀", "facts": {"n": LARGEST_INTEGER}})
    assert note.text == "é 😀" and note.facts == {"n": LARGEST_INTEGER}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"text": "a\x00b"}, "cannot be stored: $.text: a NUL character"),
        ({"text": "x", "facts": {"n": 2**64}}, "$.facts.n: an integer beyond 64 bits (20 digits)"),
        (
            {"text": "x", "facts": {"r": float("nan")}},
            "cannot be stored: $.facts.r: NaN and infinities are no values",
        ),
    ],
)
def test_a_storable_text_model_refuses_what_cannot_be_stored_saying_where(
    body: dict, said: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Note.model_validate(body)
    assert said in str(refused.value)


def test_text_is_checked_before_numbers() -> None:
    # One message per body: the first check that finds something names it.
    with pytest.raises(ValidationError, match="NUL character") as refused:
        Note.model_validate({"text": "\x00", "facts": {"n": 2**64}})
    assert "64 bits" not in str(refused.value)

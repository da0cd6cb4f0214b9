"""The screen that spares most documents the walk for NaN and infinities never misses one."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from service.schemas.document import find_non_finite, may_hold_non_finite

NON_FINITE = [
    b'{"a": NaN}',
    b"[Infinity]",
    b"[-Infinity]",
    b"[1e999]",
    b"[1E+400]",
    b"[1e0400]",
    b"[" + b"1" * 250 + b"e60]",  # 2-digit exponent, overflowing through its digits
    b"[" + b"9" * 400 + b".0]",
]


@pytest.mark.parametrize("text", NON_FINITE)
def test_every_non_finite_source_is_screened_in(text: bytes) -> None:
    assert find_non_finite(json.loads(text)) is not None
    assert may_hold_non_finite(text)


def test_ordinary_documents_are_screened_out_and_random_numbers_are_never_missed() -> None:
    rng = np.random.default_rng(0)
    samples = (rng.lognormal(3, 2, 5000) * rng.choice([1e-300, 1e-9, 1, 1e9, 1e300], 5000)).tolist()
    text = json.dumps({"samples": samples, "k": "ok", "n": 3}).encode()
    assert find_non_finite(json.loads(text)) is None
    for value in samples:
        one = json.dumps([value]).encode()
        assert math.isfinite(json.loads(one)[0])
    ordinary = json.dumps(
        {
            "samples": [float(x) for x in rng.normal(50, 1, 900)],
            "ancestors": ["651aaed5ca1ed7e61585a6e002757a70d7b425e6", "1e123abc"],
            "bytes": 1.2e11,
        }
    ).encode()
    assert not may_hold_non_finite(ordinary)
    for exponent in range(290, 330):
        for digits in (b"1", b"17", b"9" * 30):
            text = digits + b"e" + str(exponent).encode()
            value = json.loads(text)
            assert may_hold_non_finite(text) or math.isfinite(value), text

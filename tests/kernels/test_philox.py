"""Philox4x32-10 against the Random123 known-answer vectors, and the dropout convention."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.philox import dropout_keep, dropout_threshold, philox4x32_10

# Random123's kat_vectors: counter (4 words), key (2 words) -> output (4 words).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), KAT)
def test_known_answers(counter, key, expected):
    words = philox4x32_10(tuple(np.array([c], dtype=np.uint64) for c in counter), key)
    assert tuple(int(w[0]) for w in words) == expected


def test_vectorized_equals_one_by_one():
    ctr = np.arange(5, dtype=np.uint64)
    zeros = np.zeros_like(ctr)
    words = philox4x32_10((ctr, zeros, zeros, zeros), (1, 2))
    for i in range(5):
        one = philox4x32_10(tuple(np.array([v], dtype=np.uint64) for v in (i, 0, 0, 0)), (1, 2))
        assert [int(w[i]) for w in words] == [int(w[0]) for w in one]


def test_threshold():
    assert dropout_threshold(0.0) == 0
    assert dropout_threshold(0.5) == 1 << 23
    assert dropout_threshold(0.1) == 1677722  # ceil(0.1 * 2**24)
    with pytest.raises(ValueError):
        dropout_threshold(1.0)


def test_keep_mask_layout():
    # element e uses word e % 4 of the counter e // 4: a prefix of a longer mask is the mask
    long, short = dropout_keep(103, 0.5, seed=99), dropout_keep(10, 0.5, seed=99)
    np.testing.assert_array_equal(long[:10], short)
    seed = (5 << 32) | 3
    words = philox4x32_10(tuple(np.array([v], dtype=np.uint64) for v in (6, 0, 0, 0)), (3, 5))
    expected = [int(w[0]) >> 8 >= dropout_threshold(0.5) for w in words]
    assert list(dropout_keep(28, 0.5, seed)[24:28]) == expected

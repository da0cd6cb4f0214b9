"""Philox4x32-10 and the dropout mask in array code (NumPy, or CuPy through ``xp``).

Mirrors kernels/cuda/philox.cuh bit for bit: element e of a tensor is kept iff
``(r >> 8) >= ceil(p * 2**24)`` where r is word ``e % 4`` of
``philox4x32_10(counter=(e // 4 low, e // 4 high, 0, 0), key=(seed low, seed high))``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32_10(counter: tuple[Any, Any, Any, Any], key: tuple[int, int], xp: Any = np):
    """Ten Philox rounds on arrays of 32-bit counter words (any integer dtype, values < 2**32).

    Returns the four output words as uint64 arrays holding 32-bit values.
    """
    c0, c1, c2, c3 = (xp.asarray(c, dtype=xp.uint64) for c in counter)
    k0, k1 = key[0] & MASK32, key[1] & MASK32
    m0, m1, mask = xp.uint64(M0), xp.uint64(M1), xp.uint64(MASK32)
    shift = xp.uint64(32)
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0 = c0 * m0
        p1 = c2 * m1
        hi0, lo0 = p0 >> shift, p0 & mask
        hi1, lo1 = p1 >> shift, p1 & mask
        c0, c1, c2, c3 = hi1 ^ c1 ^ xp.uint64(k0), lo1, hi0 ^ c3 ^ xp.uint64(k1), lo0
    return c0, c1, c2, c3


def dropout_threshold(p: float) -> int:
    """The 24-bit threshold the kernels compare against: ceil(p * 2**24)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p}")
    return math.ceil(p * (1 << 24))


def dropout_keep(numel: int, p: float, seed: int, xp: Any = np):
    """Boolean keep-mask of the first ``numel`` elements (flat index order)."""
    thr = dropout_threshold(p)
    groups = xp.arange((numel + 3) // 4, dtype=xp.uint64)
    zeros = xp.zeros_like(groups)
    words = philox4x32_10(
        (groups & xp.uint64(MASK32), groups >> xp.uint64(32), zeros, zeros),
        (seed & MASK32, (seed >> 32) & MASK32),
        xp,
    )
    bits = xp.stack(words, axis=1).reshape(-1)[:numel]
    return (bits >> xp.uint64(8)) >= xp.uint64(thr)

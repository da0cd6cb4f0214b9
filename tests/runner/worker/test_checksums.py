"""runner.worker.checksums on NumPy arrays (CuPy and torch take the same path on their device:
tests/runner/worker/test_launch_record_gpu.py)."""

from __future__ import annotations

import numpy as np

from runner.worker.checksums import BLOCK, checksum, kind


def test_the_same_bytes_give_the_same_checksum_and_one_changed_word_another() -> None:
    x = np.random.default_rng(1).standard_normal(3 * BLOCK + 5).astype(np.float32)
    y = x.copy()
    assert checksum(x) == checksum(y)
    y[2 * BLOCK + 1] = np.nextafter(y[2 * BLOCK + 1], np.float32(np.inf))  # one ulp
    assert checksum(x)["sha256"] != checksum(y)["sha256"]


def test_words_moved_between_blocks_and_bytes_of_an_odd_tail_change_it() -> None:
    x = np.arange(4 * BLOCK, dtype=np.uint64)
    moved = x.copy()
    moved[[0, BLOCK]] = moved[[BLOCK, 0]]  # the same words, in other blocks
    assert checksum(x)["sha256"] != checksum(moved)["sha256"]
    odd = np.arange(13, dtype=np.uint8)
    other = odd.copy()
    other[-1] ^= 1  # in the bytes past the last whole 64-bit word
    assert checksum(odd)["sha256"] != checksum(other)["sha256"]


def test_shape_and_dtype_are_part_of_it_and_a_view_reads_as_its_values() -> None:
    x = np.arange(64, dtype=np.float32)
    assert checksum(x)["shape"] == [64] and checksum(x)["dtype"] == "float32"
    assert checksum(x.reshape(8, 8))["shape"] == [8, 8]
    assert checksum(x.view(np.int32))["dtype"] == "int32"
    strided = np.arange(128, dtype=np.float32)[::2]  # not contiguous: read as its values
    assert checksum(strided)["sha256"] == checksum(np.ascontiguousarray(strided))["sha256"]
    assert checksum(np.zeros(0, np.float64))["shape"] == [0]


def test_anything_but_an_array_has_none() -> None:
    assert kind([1.0, 2.0]) is None and checksum([1.0, 2.0]) is None
    assert checksum(3.5) is None and checksum("x") is None
    assert kind(np.ones(2)) == "numpy"

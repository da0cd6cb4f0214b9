"""runner.worker.pointers on NumPy arrays (their addresses are host addresses, read the same way
as a device's): a table of pointers into the instance's arrays is read by what it points at."""

from __future__ import annotations

import numpy as np

from runner.worker.pointers import fingerprints, span, targets


def group(n: int = 3, pad: int = 0) -> dict[str, np.ndarray]:
    """Three tensors and the table of their addresses, as a multi-tensor launch holds them;
    `pad`: arrays allocated before them, so that they sit at other addresses."""
    keep = [np.empty(1000 + i) for i in range(pad)]  # noqa: F841 (moves the allocations)
    arrays = {f"p{i}": np.full(64 * (i + 1), float(i), np.float32) for i in range(n)}
    arrays["ptrs"] = np.array([span(arrays[f"p{i}"])[0] for i in range(n)], dtype=np.uint64)
    return arrays


def test_a_pointer_table_reads_the_same_wherever_its_arrays_were_allocated() -> None:
    here, there = group(), group(pad=7)
    assert span(here["p0"])[0] != span(there["p0"])[0]  # other addresses, the same structure
    assert fingerprints(here) == fingerprints(there)
    assert "points_into" in fingerprints(here)["ptrs"]
    # The arrays' own contents are still read by their bytes.
    there["p1"][3] = 5.0
    assert fingerprints(there)["p1"] != fingerprints(here)["p1"]
    assert fingerprints(there)["ptrs"] == fingerprints(here)["ptrs"]


def test_a_table_that_points_elsewhere_is_another_table() -> None:
    base = fingerprints(group())["ptrs"]
    swapped = group()
    swapped["ptrs"][[0, 1]] = swapped["ptrs"][[1, 0]]
    assert fingerprints(swapped)["ptrs"] != base
    inside = group()
    inside["ptrs"][2] += 16  # four floats into p2
    assert fingerprints(inside)["ptrs"] != base
    spans = [(*span(a), name) for name, a in inside.items()]
    assert targets(inside["ptrs"], spans) == [["p0", 0], ["p1", 0], ["p2", 16]]


def test_numbers_and_pointers_to_memory_not_held_keep_their_checksum() -> None:
    arrays = group()
    arrays["sizes"] = np.array([64, 128, 192], dtype=np.int64)
    outside = np.empty(256, np.float32)
    arrays["stray"] = np.array([span(arrays["p0"])[0], span(outside)[0] + 4096], np.uint64)
    arrays["zeros"] = np.zeros(4, np.int64)
    got = fingerprints(arrays)
    for name in ("sizes", "stray", "zeros"):
        assert "sha256" in got[name] and "points_into" not in got[name], name
    # A table one past the end of its array points at nothing held either.
    arrays["ptrs"][0] = span(arrays["p0"])[0] + arrays["p0"].nbytes
    assert "points_into" not in fingerprints(arrays)["ptrs"]

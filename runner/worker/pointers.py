"""Tables of device pointers among an instance's arrays, read by what they point at.

A kernel that takes a list of tensors in one launch (a multi-tensor optimizer step, a grouped
GEMM) reads a table of their addresses, an int64 or uint64 array the instance holds beside
them. Its bytes are addresses, which differ with every process and with the order its pool
handed out blocks: by checksum it would be an input that changes on every run, and every
commit would profile its launch again. What the kernels read through it is the same whenever
each entry points at the same place of the same array, so such a table is read as that: per
entry, the path of the held array it points into (runner.worker.launch_record.held) and the
offset inside it. A table is read so only when every entry that is not 0 points into an array
the instance holds; any other int64 array keeps the checksum of its bytes (a pointer to memory
the walk does not see is an address that may mean anything: never reused on a guess).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from runner.worker.checksums import checksum, kind

MAX_ENTRIES = 1 << 16  # a longer int64 array is data, not a table of arrays (not copied whole)
WORDS = ("int64", "uint64")


def span(value: Any) -> tuple[int, int] | None:
    """(the address of an array's first byte, its bytes); None for anything else."""
    which = kind(value)
    if which == "cupy":
        return int(value.data.ptr), int(value.nbytes)
    if which == "torch":
        return int(value.data_ptr()), int(value.numel()) * int(value.element_size())
    if which == "numpy":
        return int(value.__array_interface__["data"][0]), int(value.nbytes)
    return None


def words(value: Any) -> np.ndarray:
    """An int64 or uint64 array's values on the host, as uint64 (addresses, bit for bit)."""
    if kind(value) == "torch":
        host = value.detach().cpu().numpy()
    elif kind(value) == "cupy":
        host = value.get()
    else:
        host = np.asarray(value)
    return np.ascontiguousarray(host).reshape(-1).view(np.uint64)


def targets(words: np.ndarray, spans: list[tuple[int, int, str]]) -> list[Any] | None:
    """Per word, None for 0, else [path, offset] of the span (start, bytes, path) it falls in,
    the latest-starting one where spans nest; None where a word falls in none."""
    if not spans:
        return None
    ordered = sorted(spans)
    starts = np.array([s for s, _, _ in ordered], dtype=np.uint64)
    at = np.searchsorted(starts, words, side="right").astype(np.int64) - 1
    out: list[Any] = []
    for word, i in zip(words.tolist(), at.tolist(), strict=True):
        if word == 0:
            out.append(None)
            continue
        if i < 0:
            return None
        start, size, path = ordered[i]
        if word >= start + size:
            return None
        out.append([path, word - start])
    return out if any(t is not None for t in out) else None


def fingerprints(arrays: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each array's checksum (runner.worker.checksums), a table of pointers into the others
    by what it points at instead."""
    spans = [(s[0], s[1], path) for path, a in arrays.items() if (s := span(a)) and s[1] > 0]
    out: dict[str, dict[str, Any] | None] = {}
    for path, value in arrays.items():
        out[path] = checksum(value)
        size = int(np.prod(value.shape)) if hasattr(value, "shape") else 0
        if str(value.dtype).split(".")[-1] not in WORDS or not 0 < size <= MAX_ENTRIES:
            continue
        pointed = targets(words(value), spans)
        if pointed is not None:
            text = json.dumps(pointed, separators=(",", ":")).encode()
            out[path] = {"shape": [int(n) for n in value.shape], "dtype": str(value.dtype),
                         "points_into": hashlib.sha256(text).hexdigest()}  # fmt: skip
    return out

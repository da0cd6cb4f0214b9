"""A kernel timeline's entries: each kernel's calls and time per step, from traced launches
(CUPTI records in a timing worker, or nsys's totals), largest first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runner.document.names import document_kernel_name

STEPS = 5  # cold steps traced, the L2 flushed before each


def from_totals(rows: Iterable[tuple[str, int, float]], steps: int) -> list[dict[str, Any]]:
    """(kernel, instances, total ns) over `steps` steps -> per-step entries, largest first."""
    merged: dict[str, list[float]] = {}
    for name, count, total in rows:
        entry = merged.setdefault(name, [0, 0.0])
        entry[0] += count
        entry[1] += total
    grand = sum(total for _, total in merged.values())
    kernels = [
        {
            "kernel": document_kernel_name(name),
            "calls": max(1, round(count / steps)),
            "total_ns": round(total / steps, 1),
            "share": round(total / grand, 6) if grand > 0 else 0.0,
        }
        for name, (count, total) in merged.items()
    ]
    return sorted(kernels, key=lambda k: (-k["total_ns"], k["kernel"]))


def aggregate(records: Iterable[tuple[str, int, int]], steps: int) -> list[dict[str, Any]]:
    """CUPTI kernel records (name, start ns, end ns) of `steps` steps -> timeline entries."""
    return from_totals(((name, 1, float(end - start)) for name, start, end in records), steps)

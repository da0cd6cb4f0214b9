"""How far each timing process of a history run sat from its run: the median of every process's
samples, per commit and series, read from the service's database after a history run
(benchmarks/history_gpu.py keeps them in its history.json as `process_medians`), and a summary
per duration class: the spread of the processes around their run's median, and how much of a
process's offset its series share (a process that is slow for every kernel of a class is a state
of the process, not of one workload's buffers).

    python -m benchmarks.history_processes HISTORY.json[.gz]
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np


def process_medians(db: Path, shas: dict[str, int]) -> dict[str, dict[str, list[float]]]:
    """{commit index: {series params key: [median of each process's samples]}} from a SQLite
    database of the service."""
    out: dict[str, dict[str, list[float]]] = {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT c.sha, s.params_key, r.samples, r.process_counts FROM results r "
            "JOIN commits c ON c.id = r.commit_id JOIN series s ON s.id = r.series_id"
        ).fetchall()
    for sha, key, blob, counts in rows:
        if sha not in shas:
            continue
        samples = np.frombuffer(blob, dtype="<f8")
        parts = np.split(samples, np.cumsum(json.loads(counts))[:-1])
        out.setdefault(str(shas[sha]), {})[key] = [round(float(np.median(p)), 4) for p in parts]
    return out


def summary(medians: dict[str, dict[str, list[float]]], classes: dict[str, str]) -> list[str]:
    """Per class: the sd of the processes' offsets from their run's median, and the share of
    that spread common to the class's series in the same process (the mean offset over the
    series, per process, against the offsets themselves)."""
    lines = []
    for cls in sorted(set(classes.values())):
        offsets, shared = [], []
        for per_series in medians.values():
            mine = [np.asarray(v) for k, v in per_series.items() if classes.get(k) == cls]
            if not mine or len({m.size for m in mine}) != 1:
                continue
            rel = np.stack([m / np.median(m) - 1 for m in mine])  # series x processes
            offsets.extend(rel.ravel())
            shared.extend(np.repeat(rel.mean(axis=0)[None, :], len(mine), axis=0).ravel())
        if not offsets:
            continue
        total, common = float(np.std(offsets)), float(np.std(shared))
        lines.append(
            f"{cls}: processes sit {total:.2%} (sd) from their run's median; "
            f"{(common / total) ** 2 if total else 0:.0%} of that variance is shared by the "
            f"class's series in the same process"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    path = Path((argv if argv is not None else sys.argv[1:])[0])
    raw = path.read_bytes()
    saved: dict[str, Any] = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    medians = saved.get("process_medians")
    if not medians:
        print(f"{path}: no process_medians (recorded before 2026-11-26)")
        return 1
    keys = {k for per_series in medians.values() for k in per_series}
    classes = {k: json.loads(k)["cls"] for k in keys}
    print("\n".join(summary(medians, classes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

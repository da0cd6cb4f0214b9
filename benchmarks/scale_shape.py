"""The shape of benchmarks/scale_fill.py's history, beside its bulk writer: how long each
commit's ancestry is, what each kernel's ncu capture holds, how many kernels a workload has.

The defaults are what a real runner sends (issue 34 item 7): a fill of four ncu values and one
short finding per kernel, with no work verdicts and no baseline segments, kept the commit read
flat while a history ingested from real documents (the runner's whole fixed metric set, labelled,
ncu's rule findings with their long descriptions) grew 1.7x from 200 to 2,000 commits. Each part
can be set smaller to see which one the read grows with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runner.profile.ncu import METRICS
from runner.suite.checkout import MAX_ANCESTORS
from service.analysis.work import WORK_COUNTERS

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "result-document.example.json"
DURATION = "gpu__time_duration.sum"
REGISTERS = "launch__registers_per_thread"


@dataclass(frozen=True)
class Shape:
    ancestors: int = MAX_ANCESTORS  # first-parent ancestors stored with each commit
    ncu_metrics: int = len(METRICS)  # values per kernel: the runner's fixed set, in its order
    findings: int = 5  # ncu rule findings per kernel (the example document's, long texts)
    kernels: int = 1  # kernels captured per workload: the timed one, then helpers it launches


def _unit(name: str) -> str:
    """ncu's unit for one of the runner's metrics, near enough for a benchmark's bytes."""
    for part, unit in (("pct", "%"), ("bytes", "byte"), ("duration", "ns"), ("sectors", "sector"),
                       ("requests", "request"), ("registers", "register/thread"),
                       ("cycles", "cycle"), ("inst", "inst"), ("warps", "warp"),
                       ("ratio", "inst/warp"), ("size", "")):  # fmt: skip
        if part in name:
            return unit
    return ""


class NcuRows:
    """Each workload's kernels' captures (its metrics and findings as the JSON text the ingest
    stores) and the work verdicts of their work counters."""

    def __init__(self, shape: Shape) -> None:
        self.per = shape.kernels
        names = list(METRICS)[: shape.ncu_metrics]
        self.names = names
        # One %-template per row: 70 values x 400,000 captures through json.dumps was minutes.
        entries = [
            json.dumps({n: {"value": 0, "unit": _unit(n), "label": METRICS[n]}})[1:-1]
            .replace("%", "%%")
            .replace('"value": 0', '"value": %r')
            for n in names
        ]
        self.template = "{" + ", ".join(entries) + "}"
        example = json.loads(EXAMPLE.read_text())["workloads"][2]["ncu"]["kernels"]
        pool = [f for k in example for f in k["findings"]]
        self.findings = (pool * (1 + shape.findings // max(1, len(pool))))[: shape.findings]
        self.work = [c for c in WORK_COUNTERS if c in names]

    def kernels(self, timed: str) -> list[str]:
        """A workload's kernels: the timed one, then the helpers it launches."""
        return [timed, *(f"{timed}_part{j}" for j in range(1, self.per))]

    def write(
        self,
        w: Any,
        rng: np.random.Generator,
        wl_ids: list[int],
        timed: list[str],
        duration_ns: np.ndarray,
    ) -> None:
        """The captures of workloads `wl_ids` (ids follow theirs: the fill's are consecutive
        from 1), the timed kernel's duration its median, through scale_fill's writer `w`."""
        n = len(wl_ids) * self.per
        owners = np.repeat(wl_ids, self.per).tolist()
        kernels = [k for t in timed for k in self.kernels(t)]
        values = self.values(rng, np.repeat(duration_ns, self.per))
        first = (owners[0] - 1) * self.per + 1
        w.write("ncu_kernels", n, {
            "id": range(first, first + n), "run_workload_id": owners, "kernel": kernels,
            "metrics": self.metrics_json(values), "findings": self.findings_json(rng, n),
            "determinants": "5d0c9f3a1b7e2c4d6f8a0b1c3d5e7f9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e",
            "profiled_at": None,
        })  # fmt: skip
        if self.work:
            count = n * len(self.work)
            start = (first - 1) * len(self.work) + 1
            w.write("work_verdicts", count, {
                "id": range(start, start + count), **self.work_columns(values, owners, kernels)
            })  # fmt: skip

    def values(self, rng: np.random.Generator, duration_ns: np.ndarray) -> np.ndarray:
        """(kernels, metrics) values: the duration given, the rest spread like counters."""
        out = rng.lognormal(10, 3, (len(duration_ns), len(self.names))).round(2)
        pct = [i for i, n in enumerate(self.names) if _unit(n) == "%"]
        out[:, pct] = rng.uniform(0, 100, (len(duration_ns), len(pct))).round(2)
        if DURATION in self.names:
            out[:, self.names.index(DURATION)] = duration_ns
        if REGISTERS in self.names:
            out[:, self.names.index(REGISTERS)] = 96.0
        return out

    def metrics_json(self, values: np.ndarray) -> list[str]:
        return [self.template % tuple(row) for row in values.tolist()]

    def findings_json(self, rng: np.random.Generator, n: int) -> list[str]:
        speedups = rng.uniform(0.5, 40, (n, len(self.findings))).round(2).tolist()
        return [
            json.dumps(
                [f | {"estimated_speedup": s if f["estimated_speedup"] is not None else None}
                 for f, s in zip(self.findings, row, strict=True)]
            )
            for row in speedups
        ]  # fmt: skip

    def work_columns(self, values: np.ndarray, wl_ids: list[int], kernels: list[str]) -> dict:
        """One work verdict per work counter of each capture: unchanged, as most are."""
        at = [self.names.index(c) for c in self.work]
        picked = values[:, at]
        count = len(self.work)
        return {
            "run_workload_id": np.repeat(wl_ids, count).tolist(),
            "kernel": np.repeat(np.array(kernels, dtype=object), count).tolist(),
            "counter": self.work * len(wl_ids),
            "label": [METRICS[c] for c in self.work] * len(wl_ids),
            "value": picked.reshape(-1).tolist(),
            "base_value": picked.reshape(-1).tolist(),
            "change": 0.0, "verdict": "same", "tolerance": 0.001, "pairs": 8,
        }  # fmt: skip


def segment_columns(
    cids: list[int], series: int, sha: Callable[[int], str], window: int = 64
) -> dict[str, Any]:
    """Verdicts' baseline segments as the analysis leaves them without a level shift: the
    segment starts at the oldest of the results it read
    (service.evaluation.verdicts.baseline.WINDOW); a series' first result has none."""
    starts = [max(1, c - window) if c > 1 else None for c in cids]
    lengths = [min(c - 1, window) if c > 1 else None for c in cids]
    notes = [
        f"no level shift in the {n} results read; the baseline starts at {sha(s)[:12]}"
        if s is not None
        else ""
        for s, n in zip(starts, lengths, strict=True)
    ]
    return {
        "segment_start_commit_id": [s for s in starts for _ in range(series)],
        "segment_kind": ["history" if s else None for s in starts for _ in range(series)],
        "segment_results": [n for n in lengths for _ in range(series)],
        "segment_note": [t for t in notes for _ in range(series)],
    }

"""Histories of result documents for the verdict tests: a first-parent line of commits, each
measured the way the runner measures (processes with offsets of their own, one-sided sample
noise), at levels the test chooses per commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.documents import document, sha_for


@dataclass(frozen=True)
class Noise:
    """Relative spreads of one duration class, as measured on an H100
    (benchmarks/signal_quality.py)."""

    process: float  # sd of a process's median around its run's
    sample: float  # sd (lognormal) of a sample around its process's median
    samples: int = 30  # per process
    processes: int = 3
    run: float = 0.0  # sd of a whole run around the truth (all its processes together)


LONG = Noise(process=0.001, sample=0.004)  # >= 50 us
MID = Noise(process=0.004, sample=0.01)  # 10-50 us
SHORT = Noise(process=0.01, sample=0.03, samples=60)  # < 10 us
# Kernels whose runs wander while the samples of each process sit tight, as on an H200
# (benchmarks/history_gpu.py): a register-spilling 4 ms SGEMM (its 3 processes 1-5% apart,
# samples within 0.5%), an L2-bound 50 us kernel behind a neighbour (processes 1-2.7% apart),
# and short kernels whose processes sit 2-3% apart and whose whole runs now and then sit 3-6%
# off together.
WANDERING_LONG = Noise(process=0.02, sample=0.002, samples=15)
WANDERING_MID = Noise(process=0.012, sample=0.01, samples=60, processes=6, run=0.003)
WANDERING_SHORT = Noise(process=0.02, sample=0.02, samples=176, processes=6, run=0.015)


def samples(level_us: float, noise: Noise, rng: np.random.Generator) -> list[list[float]]:
    """Per process, samples of a launch whose true time is `level_us`."""
    out = []
    whole = level_us * (1 + noise.run * rng.standard_normal()) if noise.run else level_us
    for _ in range(noise.processes):
        process = whole * (1 + noise.process * rng.standard_normal())
        # Interruptions only add time: a lognormal tail above the process's level.
        tail = rng.lognormal(0.0, noise.sample, noise.samples) - 1 + noise.sample / 2
        out.append([float(x) for x in process * (1 + tail)])
    return out


@dataclass
class Line:
    """Commits c0, c1, ... of one branch; `levels[i]` maps a kernel to its true time at ci."""

    kernels: dict[str, Noise]
    repository: str = "acme/kernels"
    prefix: str = "c"
    seed: int = 0
    labels: list[str] = field(default_factory=list)

    def label(self, i: int) -> str:
        return f"{self.prefix}{i}"

    def sha(self, i: int) -> str:
        return sha_for(f"{self.repository}:{self.label(i)}")

    def document(self, i: int, levels: dict[str, float], **kw: Any) -> dict[str, Any]:
        """The run of commit i (its parent and first-parent line are commits 0 .. i-1)."""
        line = [self.sha(j) for j in range(i - 1, -1, -1)]
        doc = document(
            commit=self.sha(i),
            parents=line[:1],
            ancestors=line,
            minutes=i,
            medians=levels,
            repository=self.repository,
            run_id=f"{self.repository.replace('/', '-')}-{self.label(i)}-{self.seed}",
            **kw,
        )
        rng = np.random.default_rng([self.seed, i])
        for w in doc["workloads"]:
            kernel = w["kernels"][0]
            w["timing"]["processes"] = [
                {"samples": s, "sm_clock_mhz": 1980.0}
                for s in samples(levels[kernel], self.kernels[kernel], rng)
            ]
        return doc

    def paired(self, head: int, base: int, levels: dict[int, dict[str, float]]) -> dict:
        """A confirmation's or bisection's document: `head` with `base` measured beside it."""
        doc = self.document(head, levels[head])
        doc["paired_base"] = self.document(base, levels[base])
        doc["run_id"] += f"-vs-{base}"
        doc["paired_base"]["run_id"] += f"-base-of-{head}"
        return doc

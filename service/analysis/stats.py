"""Summary statistics of timing samples, computed the same way for every result."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float
    mean: float
    stdev: float

    @property
    def rel_iqr(self) -> float:
        return (self.q3 - self.q1) / self.median if self.median else 0.0


def summarize(samples: np.ndarray) -> Summary:
    if samples.size == 0:
        raise ValueError("no samples to summarize")
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return Summary(
        n=int(samples.size),
        median=float(median),
        q1=float(q1),
        q3=float(q3),
        min=float(samples.min()),
        max=float(samples.max()),
        mean=float(samples.mean()),
        stdev=float(samples.std(ddof=1)) if samples.size > 1 else 0.0,
    )


def pack_samples(samples: np.ndarray) -> bytes:
    return np.asarray(samples, dtype="<f8").tobytes()


def unpack_samples(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8")

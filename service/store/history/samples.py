"""Summary statistics of timing samples, computed the same way for every result (the API's
Statistics, service.schemas.metrics: one set of fields for both)."""

from __future__ import annotations

import numpy as np

from service.schemas.metrics import Statistics


def summarize(samples: np.ndarray) -> Statistics:
    if samples.size == 0:
        raise ValueError("no samples to summarize")
    # One sort for the three quartiles: np.percentile's own overhead is most of its cost on
    # the few hundred samples of a result, and a document brings dozens of results.
    ordered = np.sort(samples)
    q1, median, q3 = (_quantile(ordered, q) for q in (0.25, 0.5, 0.75))
    # Built without validation: every field is computed here, and a document brings dozens.
    return Statistics.model_construct(
        n=int(samples.size),
        median=median,
        q1=q1,
        q3=q3,
        min=float(ordered[0]),
        max=float(ordered[-1]),
        mean=float(samples.mean()),
        stdev=float(samples.std(ddof=1)) if samples.size > 1 else 0.0,
        rel_iqr=(q3 - q1) / median if median else 0.0,
    )


def _quantile(ordered: np.ndarray, q: float) -> float:
    """np.percentile's default (linear) interpolation on sorted data."""
    position = q * (ordered.size - 1)
    low = int(position)
    high = min(low + 1, ordered.size - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def pack_samples(samples: np.ndarray) -> bytes:
    return np.asarray(samples, dtype="<f8").tobytes()


def unpack_samples(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8")

"""Timing with CUDA events: warm-up, L2 flushed before every sample, raw samples returned."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

MIN_FLUSH_BYTES = 128 << 20


class L2Flusher:
    """Writes a buffer of at least twice the L2 (and 128 MiB) on the current stream."""

    def __init__(self, device: int | None = None):
        import cupy

        self.cp = cupy
        dev = cupy.cuda.Device(device) if device is not None else cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        self.l2_bytes = int(props["l2CacheSize"])
        self.nbytes = max(2 * self.l2_bytes, MIN_FLUSH_BYTES)
        self.buffer = cupy.empty(self.nbytes, dtype=cupy.uint8)

    def __call__(self) -> None:
        stream = self.cp.cuda.get_current_stream()
        self.cp.cuda.runtime.memsetAsync(self.buffer.data.ptr, 0, self.nbytes, stream.ptr)


def time_launch(
    launch: Callable[[], Any],
    *,
    samples: int = 30,
    warmup: int = 3,
    flush: L2Flusher | None = None,
    budget_s: float | None = None,
) -> list[float]:
    """Milliseconds of ``launch`` per sample, each between two events, L2 flushed before.

    With ``budget_s`` the number of samples is cut so that they take about that long (the
    warm-up's duration is the estimate), keeping at least 5.
    """
    import cupy

    stream = cupy.cuda.get_current_stream()
    t0 = time.perf_counter()
    for _ in range(max(1, warmup)):
        if flush is not None:
            flush()
        launch()
    stream.synchronize()
    per_launch = (time.perf_counter() - t0) / max(1, warmup)
    if budget_s is not None and per_launch > 0:
        samples = max(5, min(samples, int(budget_s / per_launch)))
    events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(samples)]
    for start, end in events:
        if flush is not None:
            flush()
        start.record(stream)
        launch()
        end.record(stream)
    events[-1][1].synchronize()
    return [cupy.cuda.get_elapsed_time(s, e) for s, e in events]


def summary(samples_ms: list[float]) -> dict:
    """Median, quartiles, minimum and mean of the samples (one sample is its own quartiles)."""
    if not samples_ms:
        raise ValueError("no samples to summarize: time the launch at least once")
    q = statistics.quantiles(samples_ms, n=4) if len(samples_ms) > 1 else samples_ms * 3
    return {
        "median_ms": statistics.median(samples_ms),
        "q1_ms": q[0],
        "q3_ms": q[2],
        "min_ms": min(samples_ms),
        "mean_ms": statistics.fmean(samples_ms),
        "samples": len(samples_ms),
    }


class TracedLibrary:
    """Wraps a KernelLibrary so that every launch is bracketed by two events: a per-kernel
    breakdown of one ``Instance.launch`` (``instance.lib = TracedLibrary(instance.lib)``)."""

    def __init__(self, library: Any):
        import cupy

        self.cp = cupy
        self.library = library
        self.records: list[tuple[str, Any, Any]] = []

    def __getitem__(self, name: str) -> Callable[..., None]:
        fn = self.library[name]

        def traced(*args: Any, **kwargs: Any) -> None:
            start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record()
            fn(*args, **kwargs)
            end.record()
            self.records.append((name, start, end))

        return traced

    def __contains__(self, name: str) -> bool:
        return name in self.library

    def breakdown(self) -> dict[str, dict]:
        """{kernel: {"calls", "total_ms", "share"}} over the launches recorded so far."""
        if self.records:
            self.records[-1][2].synchronize()
        out: dict[str, dict] = {}
        for name, s, e in self.records:
            r = out.setdefault(name, {"calls": 0, "total_ms": 0.0})
            r["calls"] += 1
            r["total_ms"] += self.cp.cuda.get_elapsed_time(s, e)
        total = sum(r["total_ms"] for r in out.values()) or 1.0
        for r in out.values():
            r["share"] = r["total_ms"] / total
        return out

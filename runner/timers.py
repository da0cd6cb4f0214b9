"""Timing one launch: host clocks for CPU suites, CUDA events (L2 flushed) for GPU suites."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class HostTimer:
    """Wall-clock time of a synchronous launch, for suites whose work runs on the CPU."""

    method = "host"
    l2_flushed = False

    def __init__(self) -> None:
        pass

    def sync(self) -> None:
        pass

    def cold(self) -> None:
        pass

    def time(self, launch: Callable[[], Any]) -> float:
        start = time.perf_counter_ns()
        launch()
        return (time.perf_counter_ns() - start) / 1e3  # microseconds


class CudaEventTimer:
    """CUDA events around the launch, on a stream whose L2 was flushed just before."""

    method = "cuda_events"
    l2_flushed = True

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        device = cupy.cuda.Device()
        l2_bytes = int(device.attributes.get("L2CacheSize", 50 * 2**20))
        # Writing twice the L2 size evicts whatever the previous launch left there.
        self.flush_buffer = cupy.empty(max(2 * l2_bytes, 2**20) // 4, dtype=cupy.float32)
        self.start = cupy.cuda.Event()
        self.end = cupy.cuda.Event()

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()

    def cold(self) -> None:
        self.flush_buffer.fill(0)

    def time(self, launch: Callable[[], Any]) -> float:
        self.cold()
        self.start.record()
        launch()
        self.end.record()
        self.end.synchronize()
        return self.cp.cuda.get_elapsed_time(self.start, self.end) * 1e3  # ms -> us


def make_timer(device: str) -> HostTimer | CudaEventTimer:
    return CudaEventTimer() if device == "cuda" else HostTimer()

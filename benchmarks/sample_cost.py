"""What one cold sample of a short launch costs on the host, step by step (issue 16, item 5: a
commit in 60 s): the runner's CUPTI sample (runner.measure.timers.CuptiTimer) with CUPTI's activity
buffers of several sizes, its parts alone (the flush, launch and synchronize; the forced flush
of CUPTI's records), a CUDA-events sample, and a new placement (runner.measure.sampling.relocate).

    # on the GPU host (CuPy, cupti-python, nvcc):
    python -m benchmarks.sample_cost [--samples 200]

Times the history suite's ~4 us kernel (benchmarks/history_suite); prints one line per step
with the median and 90th percentile of its host time in ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.short_processes import SUITE, build_base

BUFFER_SIZES = (8 << 20, 1 << 20, 64 << 10)


def clocked(step: Callable[[], object], count: int) -> tuple[float, float]:
    """Median and 90th percentile of `step`'s host time over `count` calls, in ms."""
    took = []
    for _ in range(count):
        started = time.perf_counter()
        step()
        took.append((time.perf_counter() - started) * 1e3)
    return float(np.median(took)), float(np.percentile(took, 90))


def measure(count: int) -> list[tuple[str, float, float]]:
    sys.path.insert(0, str(SUITE))
    import cupy as cp
    from histsuite.workloads import stream_workloads as all_workloads

    from runner.host import gpuinfo
    from runner.measure import sampling
    from runner.measure.timers import GpuTimers
    from runner.suite.load import load_suite

    w = next(w for w in all_workloads() if w.params["cls"] == "short")
    gpu = GpuTimers()
    instance = w.prepare(0)
    rows = []
    device = cp.cuda.Device()

    def bare() -> None:
        device.synchronize()
        gpu.flush()
        instance.launch()
        device.synchronize()

    rows.append(("flush + launch + synchronize, no CUPTI", *clocked(bare, count)))
    rows.append(("CUDA events sample", *clocked(lambda: gpu.events.time(instance.launch), count)))
    cupti = gpu.cupti()
    if cupti is None:
        raise SystemExit(f"no CUPTI here: {gpu.cupti_error}")
    activity = cupti.activity
    for size in BUFFER_SIZES:
        cupti.begin()
        activity.cupti.activity_register_callbacks(lambda size=size: (size, 0), activity._completed)
        cupti.time(instance.launch)  # a buffer of the new size in place
        sample = clocked(lambda: cupti.time(instance.launch), count)
        rows.append((f"CUPTI sample, {size >> 10} KiB buffers", *sample))
        rows.append(
            (f"CUPTI forced flush alone, {size >> 10} KiB", *clocked(activity.drain, count))
        )
        cupti.end()
    timing = load_suite(SUITE).timing
    watch = gpuinfo.ClockWatch(enabled=True)
    counts: list[int] = []

    def workload() -> None:
        got = sampling.time_workload(w, gpu, "cupti", timing, 0, watch)
        counts.append(len(got["samples"]))

    rows.append(("time_workload, 16 placements (the runner's)", *clocked(workload, 3)))
    rows.append((f"  samples it took: {counts}", float("nan"), float("nan")))
    rng = np.random.default_rng()
    held: list[object] = []
    rows.append(
        (
            "new placement (filler, instance, 3 warm-ups)",
            *clocked(lambda: sampling.relocate(w, 0, "device", gpu, held, rng, False), 16),
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--samples", type=int, default=200)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        build = build_base(Path(tmp))
        os.environ["KERNELWATCH_BUILD_DIR"] = str(build)
        rows = measure(args.samples)
    print(f"{'step':<48} {'median ms':>9} {'p90 ms':>8}")
    for name, median, p90 in rows:
        print(f"{name:<48} {median:>9.3f} {p90:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The truth beside kernelwatch: every adjacent pair of builds of the history suite timed
interleaved in one process (A B, then B A, round after round), L2 flushed before every sample,
each workload with its declared timing method, compared by interquartile means, and the whole
repeated in PROCESSES fresh processes (each its own placement of the buffers in memory). Its
own code: CuPy events or CUPTI's kernel records read here, not the runner's timers.

    python -m benchmarks.history_truth PAIRS.json OUT.json

PAIRS.json: {"builds": {"name": "dir with stream.cubin", ...}, "pairs": [[base, head], ...]}.
OUT.json: per pair, per workload id: base and head times (us), the mean change, and the change
in each process (how well the instrument knows it). GPU host only (CuPy, cupti-python).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "history_suite"))

from histsuite.workloads import CUBIN, MAX_BLOCKS, THREADS, all_workloads  # noqa: E402

# Where a short kernel's buffers sit moves it, and moves one variant more than the other (seen
# on the H100: the same +25% more bytes read as +19-29% by placement): the truth is the mean
# over PROCESSES fresh processes, each with its own allocation, as a runner's processes are.
PROCESSES = 4
ROUNDS = 6  # per process: A B, B A, ...
SAMPLES = 8  # per side and round
WARMUP = 5
FLUSH_BYTES = 256 << 20  # > 2 x the H100's 50 MB L2


class Kernels:
    """A CUPTI kernel-activity subscriber: (start, end) ns of every kernel while enabled."""

    def __init__(self) -> None:
        from cupti import cupti

        self.cupti, self.records = cupti, []
        self.kind = cupti.ActivityKind.CONCURRENT_KERNEL
        cupti.activity_register_callbacks(self._buffer, self._completed)

    def _buffer(self) -> tuple[int, int]:
        return 8 << 20, 0

    def _completed(self, activities: list[Any]) -> None:
        self.records += [(a.name, a.start, a.end) for a in activities]

    def time_us(self, launch: Any, flush: Any, cp: Any) -> float:
        flush()
        cp.cuda.Device().synchronize()
        self.records = []
        self.cupti.activity_enable(self.kind)
        launch()
        cp.cuda.Device().synchronize()
        self.cupti.activity_disable(self.kind)
        self.cupti.activity_flush_all(1)
        mine = [(s, e) for name, s, e in self.records if name.startswith("hist_")]
        if not mine:
            raise RuntimeError("CUPTI recorded no kernel of the launch")
        return (max(e for _, e in mine) - min(s for s, _ in mine)) / 1e3


def measure(pairs: dict[str, Any]) -> dict[str, Any]:
    import cupy as cp

    flush_buffer = cp.empty(FLUSH_BYTES, dtype=cp.uint8)

    def flush() -> None:
        cp.cuda.runtime.memsetAsync(
            flush_buffer.data.ptr, 0, FLUSH_BYTES, cp.cuda.get_current_stream().ptr
        )

    modules = {
        name: cp.RawModule(path=str(Path(folder) / CUBIN))
        for name, folder in pairs["builds"].items()
    }
    cupti = Kernels()
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def events_us(launch: Any) -> float:
        flush()  # ~80 us of memset: the launch is enqueued before the GPU reaches `start`
        start.record()
        launch()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e3

    out: dict[str, Any] = {}
    for base, head in pairs["pairs"]:
        rows = {
            w.id: _interleaved(w, modules[base], modules[head], cupti, flush, events_us, cp)
            for w in all_workloads()
        }
        out[f"{base}..{head}"] = rows
        changes = ", ".join(f"{wid[7:-1]} {r['change']:+.2%}" for wid, r in rows.items())
        print(f"truth {base[:10]}..{head[:10]}: {changes}", flush=True)
    return out


def _interleaved(
    w: Any, base: Any, head: Any, cupti: Kernels, flush: Any, events_us: Any, cp: Any
) -> dict[str, Any]:
    """One workload, base and head kernels on the same buffers, A B / B A round after round."""
    kernels = {"base": base.get_function(w.kernels[0]), "head": head.get_function(w.kernels[0])}
    blocks = min(MAX_BLOCKS, (w.n // 4 + THREADS - 1) // THREADS)
    x = cp.random.RandomState(1).standard_normal(w.n, dtype=cp.float32)
    pad = cp.zeros(w.n, dtype=cp.float32)
    y = cp.empty(w.n, dtype=cp.float32)
    args = (x, pad, y, np.int64(w.n // 4))
    launch = {
        side: functools.partial(kernel, (blocks,), (THREADS,), args)
        for side, kernel in kernels.items()
    }

    def sample(side: str) -> float:
        if w.timing_method == "cupti":
            return cupti.time_us(launch[side], flush, cp)
        return events_us(launch[side])

    for side in launch:
        for _ in range(WARMUP):
            launch[side]()
    cp.cuda.Device().synchronize()
    taken: dict[str, list[float]] = {"base": [], "head": []}
    for r in range(ROUNDS):
        order = ("base", "head") if r % 2 == 0 else ("head", "base")
        for side in order:
            taken[side] += [sample(side) for _ in range(SAMPLES)]
    b, h = central(taken["base"]), central(taken["head"])
    return {"base_us": b, "head_us": h, "change": h / b - 1}


def central(samples: list[float]) -> float:
    """The interquartile mean: as robust as the median to the odd slow sample, and finer than
    it where the timer's ticks (CUPTI's 32 ns) are a good part of a short kernel's time."""
    x = np.sort(np.asarray(samples))
    q1, q3 = np.percentile(x, [25, 75])
    return float(x[(x >= q1) & (x <= q3)].mean())


def combine(processes: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pair and workload: the mean change over the processes, and its spread."""
    out: dict[str, Any] = {}
    for pair, rows in processes[0].items():
        out[pair] = {}
        for wid in rows:
            changes = [p[pair][wid]["change"] for p in processes]
            out[pair][wid] = {
                "change": float(np.mean(changes)),
                "placement_changes": changes,
                "base_us": float(np.mean([p[pair][wid]["base_us"] for p in processes])),
                "head_us": float(np.mean([p[pair][wid]["head_us"] for p in processes])),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    spec, out = Path(args[0]), Path(args[1])
    started = time.monotonic()
    if len(args) > 2 and args[2] == "--one":  # one process's measurement
        out.write_text(json.dumps(measure(json.loads(spec.read_text()))))
        return 0
    runs = []
    for i in range(PROCESSES):
        part = out.with_suffix(f".{i}.json")
        subprocess.run([sys.executable, "-m", "benchmarks.history_truth", str(spec), str(part),
                        "--one"], cwd=ROOT, check=True)  # fmt: skip
        runs.append(json.loads(part.read_text()))
    result = {"seconds": time.monotonic() - started, "pairs": combine(runs)}
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

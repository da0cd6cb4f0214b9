"""The truth beside kernelwatch: every adjacent pair of builds of the history suite timed
interleaved in one process (A B, then B A), L2 flushed before every sample, each workload with
its declared timing method, on PLACEMENTS placements of its buffers in each of PROCESSES fresh
processes, the change taken between the interquartile means of all the base and all the head
samples (`central`: as robust as the median kernelwatch reports, and finer where CUPTI's 32 ns
ticks are a good part of a short kernel's time: on the H200 the medians of a 3.5 us kernel's
samples sat on a grid of 0.9%, 3.456 or 3.488 us, so a change of 15-18% was known to a point or
two; recordings before 2026-11-29 took medians). Its own code: CuPy events or CUPTI's kernel
records read here, not the runner's timers.

    python -m benchmarks.history_truth PAIRS.json OUT.json

PAIRS.json: {"builds": {"name": "build dir (stream.cubin, wander.cubin)", ...},
"pairs": [[base, head], ...]}.
OUT.json: per pair, per workload id: base and head times (us), the mean change, and the change
in each process (how well the instrument knows it). GPU host only (CuPy, cupti-python).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "history_suite"))

from histsuite.workloads import all_workloads  # noqa: E402

# Where a short kernel's buffers sit moves it, and moves one variant more than the other: on
# the H100 45% more bytes read cost a ~4 us kernel +29% to +48% by placement (sd 6 points;
# docs/timing-studies.md). Fresh processes alone do not move the buffers:
# they allocate the same way, and four of them once agreed on +48% within 0.6 point. So every
# placement is on fresh memory (CuPy's cached blocks given back: otherwise the buffers come out
# of the chunks the earlier workloads left, the same pages every time) behind a filler of a
# random size, and the truth is taken over all of them.
PROCESSES = int(os.environ.get("KERNELWATCH_TRUTH_PROCESSES", "4"))
# A kernel that spills reads and writes local memory, which the driver places once per process
# (when the first launch needs it), not with the buffers: the H200's spilling SGEMM sat 1-5%
# apart between the runner's processes, while four truth processes that allocated the same way
# agreed within 0.2 point. So each process first takes a filler of a random size, before any
# module is loaded or kernel launched: its local memory, and all that follows, lands elsewhere.
CONTEXT_FILLER_MAX_BYTES = 1 << 30
# Workload ids (prefixes) to measure, comma-separated; all of them when unset.
ONLY = tuple(p for p in os.environ.get("KERNELWATCH_TRUTH_ONLY", "").split(",") if p)
PLACEMENTS = 16  # per process and workload, each behind a random filler
# A launch of milliseconds is not moved by where its buffers sit the way a short one is, and
# 16 placements of it cost seconds a pair: it gets a few.
LONG_PLACEMENTS = 2
LONG_FLOPS = 1e10  # a workload doing more is a long launch (the SGEMMs of histsuite/wander.py)
FILLER_MAX_BYTES = 192 << 20
ROUNDS = 2  # per placement: A B, B A
SAMPLES = 8  # per side and round
WARMUP = 5
FLUSH_BYTES = 256 << 20  # > 2 x the H100's 50 MB L2


class Kernels:
    """A CUPTI kernel-activity subscriber: the span of the kernels one launch ran whose names
    start with one of `names` (the flush before it is left out)."""

    def __init__(self, names: tuple[str, ...] = ("hist_",)) -> None:
        from cupti import cupti

        self.cupti, self.records, self.names = cupti, [], names
        self.kind = cupti.ActivityKind.CONCURRENT_KERNEL
        cupti.activity_register_callbacks(self._buffer, self._completed)

    def _buffer(self) -> tuple[int, int]:
        return 8 << 20, 0

    def _completed(self, activities: list[Any]) -> None:
        self.records += [(a.name, a.start, a.end) for a in activities]

    def time_us(self, launch: Any, flush: Any, synchronize: Any) -> float:
        flush()
        synchronize()
        self.records = []
        self.cupti.activity_enable(self.kind)
        launch()
        synchronize()
        self.cupti.activity_disable(self.kind)
        self.cupti.activity_flush_all(1)
        mine = [(s, e) for name, s, e in self.records if name.startswith(self.names)]
        if not mine:
            raise RuntimeError("CUPTI recorded no kernel of the launch")
        return (max(e for _, e in mine) - min(s for s, _ in mine)) / 1e3


def chosen() -> list[Any]:
    return [w for w in all_workloads() if not ONLY or w.id.startswith(ONLY)]


def measure(pairs: dict[str, Any]) -> dict[str, Any]:
    import cupy as cp

    rng = np.random.default_rng()
    context_filler = cp.empty(int(rng.integers(1, CONTEXT_FILLER_MAX_BYTES >> 20)) << 20, cp.uint8)
    flush_buffer = cp.empty(FLUSH_BYTES, dtype=cp.uint8)

    def flush() -> None:
        cp.cuda.runtime.memsetAsync(
            flush_buffer.data.ptr, 0, FLUSH_BYTES, cp.cuda.get_current_stream().ptr
        )

    cubins = {w.cubin for w in chosen()}
    modules = {
        name: {c: cp.RawModule(path=str(Path(folder) / c)) for c in cubins}
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
            for w in chosen()
        }
        out[f"{base}..{head}"] = rows
        changes = ", ".join(f"{wid} {r['change']:+.2%}" for wid, r in rows.items())
        print(f"truth {base[:10]}..{head[:10]}: {changes}", flush=True)
    del context_filler
    return out


def _interleaved(
    w: Any, base: dict, head: dict, cupti: Kernels, flush: Any, events_us: Any, cp: Any
) -> dict[str, Any]:
    """One workload, base and head kernels on the same buffers, A B / B A, on several
    placements of fresh buffers, each behind a filler of a random size."""
    rng = np.random.default_rng()
    taken: dict[str, list[float]] = {"base": [], "head": []}
    pool, held = cp.get_default_memory_pool(), []
    placements = LONG_PLACEMENTS if (w.flops or 0) >= LONG_FLOPS else PLACEMENTS
    for _ in range(placements):
        pool.free_all_blocks()  # fresh pages, not the chunks earlier workloads left cached
        filler = cp.empty(int(rng.integers(1, FILLER_MAX_BYTES >> 16)) << 16, dtype=cp.uint8)
        instance = w.prepare(1)
        held.append((filler, instance))  # until the last placement: the next ones go elsewhere
        launch = {"base": instance.launcher(base[w.cubin]),
                  "head": instance.launcher(head[w.cubin])}  # fmt: skip

        def sample(side: str, launch: dict[str, Any] = launch) -> float:
            if w.timing_method == "cupti":
                return cupti.time_us(launch[side], flush, cp.cuda.Device().synchronize)
            return events_us(launch[side])

        for side in launch:
            for _ in range(WARMUP):
                launch[side]()
        cp.cuda.Device().synchronize()
        for r in range(ROUNDS):
            order = ("base", "head") if r % 2 == 0 else ("head", "base")
            for side in order:
                taken[side] += [round(sample(side), 4) for _ in range(SAMPLES)]
    for _, instance in held:
        instance.close()
    del held
    pool.free_all_blocks()
    b, h = central(taken["base"]), central(taken["head"])
    return {"base_us": b, "head_us": h, "change": h / b - 1, **taken}


class EventTimer:
    """One launch timed by CUDA events on the default stream, the L2 flushed before it, in us
    (torch's; GPU host only)."""

    def __init__(self, torch: Any, flush_bytes: int = 1 << 30) -> None:
        self.flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def __call__(self, launch: Any) -> float:
        self.flush.zero_()
        self.start.record()
        launch()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e3


def alternated(sample: Any, warmup: int, rounds: int, samples: int) -> dict[str, float]:
    """`sample("base")` and `sample("head")` warmed up, then taken A B / B A round after round:
    the interquartile means of each side (us) and the change between them."""
    for side in ("base", "head"):
        for _ in range(warmup):
            sample(side)
    taken: dict[str, list[float]] = {"base": [], "head": []}
    for r in range(rounds):
        for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
            taken[side] += [sample(side) for _ in range(samples)]
    b, h = central(taken["base"]), central(taken["head"])
    return {"base_us": b, "head_us": h, "change": h / b - 1}


def in_processes(module: str, args: list[str], out: Path, processes: int) -> list[Any]:
    """`python -m module *args PART --one` once per process, one after the other (a process
    of its own each: what one process measures includes its own placement in memory); what
    each wrote to its PART file."""
    runs = []
    for i in range(processes):
        part = out.with_suffix(f".{i}.json")
        subprocess.run([sys.executable, "-m", module, *args, str(part), "--one"], cwd=ROOT,
                       check=True)  # fmt: skip
        runs.append(json.loads(part.read_text()))
    return runs


def mean_over_processes(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per workload: the mean of the processes' changes and times, and each process's change."""
    return {
        wid: {
            "change": float(np.mean([r[wid]["change"] for r in runs])),
            "process_changes": [r[wid]["change"] for r in runs],
            "base_us": float(np.mean([r[wid]["base_us"] for r in runs])),
            "head_us": float(np.mean([r[wid]["head_us"] for r in runs])),
        }
        for wid in runs[0]
    }


def central(samples: list[float]) -> float:
    """The interquartile mean: as robust as the median to the odd slow sample, and finer than
    it where the timer's ticks (CUPTI's 32 ns) are a good part of a short kernel's time."""
    x = np.sort(np.asarray(samples))
    q1, q3 = np.percentile(x, [25, 75])
    return float(x[(x >= q1) & (x <= q3)].mean())


def combine(processes: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pair and workload: the change between the central values of all the processes'
    samples, and each process's own change (how well the instrument knows it)."""
    out: dict[str, Any] = {}
    for pair, rows in processes[0].items():
        out[pair] = {}
        for wid in rows:
            mine = [p[pair][wid] for p in processes]
            b = central(list(np.concatenate([m["base"] for m in mine])))
            h = central(list(np.concatenate([m["head"] for m in mine])))
            out[pair][wid] = {
                "change": h / b - 1,
                "placement_changes": [m["change"] for m in mine],  # per process
                "process_medians": [
                    [float(np.median(m["base"])), float(np.median(m["head"]))] for m in mine
                ],
                "base_us": b,
                "head_us": h,
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
    # A device session's limit: the processes that fit in it (at least one) make the truth.
    budget = float(os.environ.get("KERNELWATCH_TRUTH_SECONDS", "inf"))
    for i in range(PROCESSES):
        spent = time.monotonic() - started
        if i and spent + spent / i > budget:
            print(f"truth: {i} of {PROCESSES} processes fit in {budget:g} s", flush=True)
            break
        part = out.with_suffix(f".{i}.json")
        subprocess.run([sys.executable, "-m", "benchmarks.history_truth", str(spec), str(part),
                        "--one"], cwd=ROOT, check=True)  # fmt: skip
        runs.append(json.loads(part.read_text()))
    result = {"seconds": time.monotonic() - started, "pairs": combine(runs)}
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How a cold CUPTI sample of a few-microsecond kernel is taken, and what it changes: the
history suite's short kernels (benchmarks/history_suite), base and head builds in one process,
interleaved A B / B A, under several sampling procedures, in several fresh processes.

    # on the GPU host (CuPy, cupti-python, nvcc):
    python -m benchmarks.short_timing OUT.json [--processes 4]
    # anywhere, from a saved OUT.json (or .json.gz: benchmarks/results/short_*_h100.json.gz):
    python -m benchmarks.short_timing --table OUT.json

Procedures (each sample: L2 flushed by a memset, then the kernel, timed by CUPTI's records):
- runner: the runner's own timer (runner.measure.timers: 128 MiB flush enqueued right before the
  launch, kernel activity enabled for the whole round),
- flush256: the same with a 256 MiB flush,
- gap: the runner's flush, then a device synchronize before the launch is enqueued,
- toggled: the gap, with kernel activity enabled and disabled around each launch (the
  procedure of benchmarks/history_truth.py before 2026-11-26).
The table gives each procedure's base and head times and change, by median and interquartile
mean, and how far apart the processes were: whether the procedure, not the code, moves a
short kernel's change.

    python -m benchmarks.short_timing OUT.json --placements 8

instead measures, in each process, PLACEMENTS placements of each workload's buffers in memory
(a filler of a random size allocated first, so that the buffers land elsewhere), base and head
interleaved on each with the runner's timer: how much where the buffers sit moves the change.

    python -m benchmarks.short_timing OUT.json --sources 16

times one short kernel (the base build's) in each process on `sources` placements of what a
cold sample touches, one thing moved at a time (each behind a filler of a random size): none
(the same buffers again), the workload's buffers, the L2 flush buffer, the kernel's code (its
module loaded again), or buffers and flush buffer; the table
gives the spread within a process and between the processes' means, per thing moved.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "history_suite"))

from histsuite.workloads import CUBIN, MAX_BLOCKS, THREADS  # noqa: E402
from histsuite.workloads import stream_workloads as all_workloads  # noqa: E402

from benchmarks.history_gpu import STEP, extra_header  # noqa: E402

PROCEDURES = ("runner", "flush256", "gap", "toggled")
ROUNDS = 8
SAMPLES = 16
WARMUP = 5


def build(work: Path, extras: dict[int, float], name: str) -> Path:
    tree = work / f"src-{name}"
    shutil.copytree(ROOT / "benchmarks" / "history_suite", tree,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (tree / "histsuite" / "cuda" / "extra.h").write_text(extra_header(extras))
    out = work / f"build-{name}"
    subprocess.run([sys.executable, "-m", "histsuite.build", "--out", str(out)], cwd=tree,
                   check=True, capture_output=True)  # fmt: skip
    return out / CUBIN


def iqm(x: Any) -> float:
    x = np.sort(np.asarray(x, dtype=np.float64))
    q1, q3 = np.percentile(x, [25, 75])
    return float(x[(x >= q1) & (x <= q3)].mean())


def measure(cubins: dict[str, str], placements: int = 0) -> dict[str, Any]:
    """One process: every short workload, every procedure (or `placements` placements with
    the runner's procedure), base and head interleaved."""
    import cupy as cp

    from runner.measure.timers import GpuTimers, busy_ns

    timers = GpuTimers()
    runner = timers.cupti()
    if runner is None:
        raise SystemExit(f"no CUPTI here: {timers.cupti_error}")
    activity = runner.activity
    big = cp.empty(256 << 20, dtype=cp.uint8)

    def flush256() -> None:
        cp.cuda.runtime.memsetAsync(big.data.ptr, 0, big.nbytes, cp.cuda.get_current_stream().ptr)

    def recorded() -> float:
        cp.cuda.Device().synchronize()
        records = activity.drain()
        return busy_ns(records) / 1e3

    def sample(procedure: str, launch: Any) -> float:
        cp.cuda.Device().synchronize()
        if procedure == "runner":
            return runner.time(launch)
        if procedure == "flush256":
            flush256()
            launch()
            return recorded()
        timers.flush()
        cp.cuda.Device().synchronize()
        if procedure == "gap":
            launch()
            return recorded()
        activity.enable()
        launch()
        cp.cuda.Device().synchronize()
        records = activity.drain()
        activity.disable()
        return busy_ns(records) / 1e3

    modules = {side: cp.RawModule(path=path) for side, path in cubins.items()}
    out: dict[str, Any] = {}
    for w in all_workloads():
        if w.params["cls"] != "short":
            continue
        x = cp.random.RandomState(1).standard_normal(w.n, dtype=cp.float32)
        pad = cp.zeros(w.n, dtype=cp.float32)
        y = cp.empty(w.n, dtype=cp.float32)
        blocks = min(MAX_BLOCKS, (w.n // 4 + THREADS - 1) // THREADS)
        args = (x, pad, y, np.int64(w.n // 4))
        launch = {
            side: functools.partial(m.get_function(w.kernels[0]), (blocks,), (THREADS,), args)
            for side, m in modules.items()
        }
        for side in launch:
            for _ in range(WARMUP):
                launch[side]()
        out[w.id] = {}
        if placements:
            out[w.id] = placed(w, modules, placements, sample, activity, cp)
            continue
        for procedure in PROCEDURES:
            taken: dict[str, list[float]] = {"base": [], "head": []}
            if procedure != "toggled":
                activity.enable()
                activity.drain()
            for r in range(ROUNDS):
                for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                    taken[side] += [sample(procedure, launch[side]) for _ in range(SAMPLES)]
            activity.disable()
            out[w.id][procedure] = taken
    return out


def placed(w: Any, modules: dict[str, Any], count: int, sample: Any, activity: Any,
           cp: Any) -> dict[str, Any]:  # fmt: skip
    """Base and head interleaved on `count` placements of fresh buffers, each behind a filler
    of a random size (0-192 MiB in 64 KiB steps)."""
    rng = np.random.default_rng()
    blocks = min(MAX_BLOCKS, (w.n // 4 + THREADS - 1) // THREADS)
    out: dict[str, Any] = {"base": [], "head": []}
    for _ in range(count):
        filler = cp.empty(int(rng.integers(0, 3072)) << 16, dtype=cp.uint8)
        x = cp.random.RandomState(1).standard_normal(w.n, dtype=cp.float32)
        pad = cp.zeros(w.n, dtype=cp.float32)
        y = cp.empty(w.n, dtype=cp.float32)
        args = (x, pad, y, np.int64(w.n // 4))
        launch = {
            side: functools.partial(m.get_function(w.kernels[0]), (blocks,), (THREADS,), args)
            for side, m in modules.items()
        }
        for side in launch:
            for _ in range(WARMUP):
                launch[side]()
        taken: dict[str, list[float]] = {"base": [], "head": []}
        activity.enable()
        activity.drain()
        for r in range(ROUNDS // 2):
            for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                taken[side] += [sample("runner", launch[side]) for _ in range(SAMPLES)]
        activity.disable()
        for side in taken:
            out[side].append(taken[side])
        del filler, x, pad, y
    return out


SOURCES = ("none", "buffers", "flush", "module", "both")


def sources(cubins: dict[str, str], count: int) -> dict[str, list[float]]:
    """One process: the short base kernel's interquartile mean on `count` placements of each
    of SOURCES."""
    import cupy as cp

    from runner.measure.timers import GpuTimers, busy_ns

    timers = GpuTimers()
    cupti = timers.cupti()
    if cupti is None:
        raise SystemExit(f"no CUPTI here: {timers.cupti_error}")
    activity = cupti.activity
    w = next(w for w in all_workloads() if w.params["cls"] == "short")
    kernel = cp.RawModule(path=cubins["base"]).get_function(w.kernels[0])
    args: tuple[Any, ...] = ()
    blocks = min(MAX_BLOCKS, (w.n // 4 + THREADS - 1) // THREADS)
    rng = np.random.default_rng()
    held: list[Any] = []

    def filler() -> None:
        held.append(cp.empty(int(rng.integers(1, 3072)) << 16, dtype=cp.uint8))

    def buffers() -> Any:
        nonlocal args
        filler()
        x = cp.random.RandomState(1).standard_normal(w.n, dtype=cp.float32)
        pad, y = cp.zeros(w.n, dtype=cp.float32), cp.empty(w.n, dtype=cp.float32)
        held.extend((x, pad, y))
        args = (x, pad, y, np.int64(w.n // 4))
        return functools.partial(kernel, (blocks,), (THREADS,), args)

    def module() -> Any:
        filler()
        loaded = cp.RawModule(path=cubins["base"])  # the kernel's code elsewhere
        held.append(loaded)
        return functools.partial(loaded.get_function(w.kernels[0]), (blocks,), (THREADS,), args)

    def flush_buffer() -> Any:
        filler()
        buffer = cp.empty(timers.flush.nbytes, dtype=cp.uint8)
        held.append(buffer)
        stream = cp.cuda.get_current_stream()
        return lambda: cp.cuda.runtime.memsetAsync(buffer.data.ptr, 0, buffer.nbytes, stream.ptr)

    def timed(launch: Any, flush: Any) -> float:
        for _ in range(WARMUP):
            launch()
        activity.enable()
        activity.drain()
        taken = []
        for _ in range(3 * SAMPLES):
            cp.cuda.Device().synchronize()
            flush()
            launch()
            cp.cuda.Device().synchronize()
            taken.append(busy_ns(activity.drain()) / 1e3)
        activity.disable()
        return iqm(taken)

    first_launch, first_flush = buffers(), flush_buffer()
    out: dict[str, list[float]] = {}
    for source in SOURCES:
        out[source] = []
        for _ in range(count):
            launch = buffers() if source in ("buffers", "both") else first_launch
            launch = module() if source == "module" else launch
            flush = flush_buffer() if source in ("flush", "both") else first_flush
            out[source].append(timed(launch, flush))
    return out


def sources_table(processes: list[dict[str, Any]]) -> str:
    lines = [
        "| moved | mean us | sd within a process | sd of the processes' means | processes' means |",
        "|---|--:|--:|--:|---|",
    ]
    for source in SOURCES:
        per = [np.asarray(p[source]) for p in processes]
        means = [float(x.mean()) for x in per]
        within = float(np.sqrt(np.mean([x.var(ddof=1) for x in per])))
        center = float(np.mean(means))
        lines.append(
            f"| {source} | {center:.3f} | {within / center:.2%} "
            f"| {np.std(means, ddof=1) / center:.2%} | {', '.join(f'{m:.3f}' for m in means)} |"
        )
    return "\n".join(lines)


def placement_table(processes: list[dict[str, Any]]) -> str:
    lines = [
        "| workload | base IQM us, placements | change by IQM, placements | mean | sd | "
        "processes' means |",
        "|---|---|---|--:|--:|---|",
    ]
    for wid in processes[0]:
        bases, changes, means = [], [], []
        for p in processes:
            mine = [iqm(h) / iqm(b) - 1 for b, h in zip(p[wid]["base"], p[wid]["head"],
                                                         strict=True)]  # fmt: skip
            bases += [iqm(b) for b in p[wid]["base"]]
            changes += mine
            means.append(float(np.mean(mine)))
        lines.append(
            f"| {wid} | {min(bases):.3f}-{max(bases):.3f} "
            f"| {min(changes):+.2%} to {max(changes):+.2%} | {np.mean(changes):+.2%} "
            f"| {np.std(changes, ddof=1):.2%} | {', '.join(f'{m:+.2%}' for m in means)} |"
        )
    return "\n".join(lines)


def table(processes: list[dict[str, Any]]) -> str:
    lines = [
        "| workload | procedure | base median / IQM us | head median / IQM us | change by median "
        "| change by IQM | IQM change per process |",
        "|---|---|--:|--:|--:|--:|---|",
    ]
    for wid in processes[0]:
        for procedure in PROCEDURES:
            base = np.concatenate([p[wid][procedure]["base"] for p in processes])
            head = np.concatenate([p[wid][procedure]["head"] for p in processes])
            per = [iqm(p[wid][procedure]["head"]) / iqm(p[wid][procedure]["base"]) - 1
                   for p in processes]  # fmt: skip
            lines.append(
                f"| {wid} | {procedure} | {np.median(base):.3f} / {iqm(base):.3f} "
                f"| {np.median(head):.3f} / {iqm(head):.3f} "
                f"| {np.median(head) / np.median(base) - 1:+.2%} "
                f"| {iqm(head) / iqm(base) - 1:+.2%} | {', '.join(f'{c:+.2%}' for c in per)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("--table", type=Path)
    p.add_argument("--processes", type=int, default=4)
    p.add_argument("--placements", type=int, default=0)
    p.add_argument("--sources", type=int, default=0)
    p.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a child: its cubins' spec
    args = p.parse_args(argv)
    if args.one:
        spec = json.loads(args.one.read_text())
        one = functools.partial(sources, spec, args.sources) if args.sources else None
        measured = one() if one else measure(spec, args.placements)
        args.out.write_text(json.dumps(measured))
        return 0
    if args.table:
        raw = args.table.read_bytes()
        saved = json.loads(gzip.decompress(raw) if args.table.suffix == ".gz" else raw)
        print(_render(saved)(saved["processes"]))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = work / "cubins.json"
        cubins = {"base": str(build(work, {}, "base")), "head": str(build(work, STEP, "head"))}
        spec.write_text(json.dumps(cubins))
        processes = []
        for i in range(args.processes):
            part = work / f"p{i}.json"
            subprocess.run([sys.executable, "-m", "benchmarks.short_timing", str(part), "--one",
                            str(spec), "--placements", str(args.placements), "--sources",
                            str(args.sources)], cwd=ROOT, check=True)  # fmt: skip
            processes.append(json.loads(part.read_text()))
    saved = {"step": STEP, "placements": args.placements, "sources": args.sources,
             "processes": processes}  # fmt: skip
    args.out.write_text(json.dumps(saved))
    print(_render(saved)(processes))
    return 0


def _render(saved: dict[str, Any]) -> Any:
    if saved.get("sources"):
        return sources_table
    return placement_table if saved.get("placements") else table


if __name__ == "__main__":
    sys.exit(main())

"""Where the per-process offset of CUPTI-timed short kernels in the runner's timing processes
comes from: the history suite's four ~4 us kernels timed through the runner's own sampling
(runner.measure.sampling.time_workload, runner.measure.timers.GpuTimers, gpuinfo.ClockWatch), in
fresh processes, one thing changed at a time (a variant), the variants' processes interleaved so
that a drift of the GPU over the minutes weighs on each alike.

    # on the GPU host (CuPy, cupti-python, nvcc):
    python -m benchmarks.short_processes OUT.json [--processes 6] [--variants a,b]
    # anywhere, from a saved OUT.json[.gz]:
    python -m benchmarks.short_processes --table OUT.json

Variants: runner (the suite's 8 longer workloads timed first, as in the suite's processes),
short-only (the short workloads alone, as in the extra processes), and, short-only each:
no-watch (no NVML readings), no-filler (placements where the allocator puts them, no
cached blocks given back), no-local (local memory never moved), one-round (one placement);
and, after the longer workloads as in runner: flush-new (a new ring of L2 flush buffers before
the short ones), ring-first (the whole ring allocated first of all), runner-no-local (local
memory never moved); short-first (pass 1 before the longer workloads, pass 2 after them);
big-alloc (short-only after 512 MiB written and given back).
Each process times every short workload twice (pass 1 and 2), so that the table can tell an
offset of the process (both passes share it) from one of a pass.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "history_suite"
VARIANTS = (
    "runner", "short-only", "no-watch", "no-filler", "no-local", "one-round",
    "short-first", "flush-new", "ring-first", "runner-no-local", "big-alloc",
)  # fmt: skip


def build_base(work: Path) -> Path:
    """The history suite's base build under `work` (its folder, for KERNELWATCH_BUILD_DIR)."""
    tree = work / "suite"
    shutil.copytree(SUITE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    build = work / "build"
    subprocess.run([sys.executable, "-m", "histsuite.build", "--out", str(build)], cwd=tree,
                   check=True, capture_output=True)  # fmt: skip
    return build


def child(variant: str) -> dict[str, Any]:
    """One process of `variant`: per short workload, each pass's median and round medians."""
    sys.path.insert(0, str(SUITE))
    import cupy as cp
    from histsuite.workloads import stream_workloads as all_workloads

    from runner.host import gpuinfo
    from runner.measure import sampling
    from runner.measure.timers import FLUSH_BUFFERS, GpuTimers, L2Flush
    from runner.suite.load import load_suite
    from runner.worker.process import device_properties

    timing = load_suite(SUITE).timing
    timers = GpuTimers()
    gpuinfo.bind(device_properties()["pci_bus_id"])
    watch = gpuinfo.ClockWatch(enabled=variant != "no-watch")
    if variant == "no-filler":
        timers.filler = lambda rng: None  # type: ignore[method-assign]
    if variant == "ring-first":  # the whole ring of flush buffers before anything else
        for _ in range(FLUSH_BUFFERS):
            timers.flush.move()
    if variant in ("no-local", "runner-no-local"):
        timers.relocate_local_memory = lambda: False  # type: ignore[method-assign]
    if variant == "one-round":
        sampling.placements = lambda timers, host_us: 1  # type: ignore[assignment]
    workloads = all_workloads()
    longer = [w for w in workloads if w.params["cls"] != "short"]
    if variant in ("runner", "flush-new", "ring-first", "runner-no-local"):
        for w in longer:
            sampling.time_workload(w, timers, w.timing_method, timing, 0, watch)
    if variant == "flush-new":  # a new ring of flush buffers after the longer workloads
        timers.flush = timers.events.flush = L2Flush()
    if variant == "big-alloc":  # what the longer workloads' buffers do to memory, alone
        big = cp.empty(512 << 20, dtype=cp.uint8)
        big.fill(1)
        cp.cuda.Device().synchronize()
        del big
        cp.get_default_memory_pool().free_all_blocks()
    out: dict[str, Any] = {"variant": variant, "passes": []}
    for index in range(2):
        if variant == "short-first" and index == 1:
            for w in longer:
                sampling.time_workload(w, timers, w.timing_method, timing, 0, watch)
        one = {}
        for w in (w for w in workloads if w.params["cls"] == "short"):
            got = sampling.time_workload(w, timers, w.timing_method, timing, 0, watch)
            samples = np.asarray(got["samples"])
            rounds = np.array_split(samples, got["placements"])
            one[str(w.params["w"])] = {
                "median": float(np.median(samples)),
                "rounds": [float(np.median(r)) for r in rounds],
                "clock": got.get("sm_clock_mhz"),
            }
        out["passes"].append(one)
    return out


def offset(process: dict[str, Any], index: int, level: dict[str, float]) -> float:
    """A pass's offset: the mean over the short workloads of its median against `level`."""
    one = process["passes"][index]
    return float(np.mean([one[k]["median"] / level[k] - 1 for k in level]))


def table(processes: list[dict[str, Any]]) -> str:
    """Per variant: the processes' offsets (mean over the short workloads of each pass's
    median against the variant's median of that workload), their sd in pass 1 and pass 2, how
    much pass 2 repeats pass 1's offset, and the sd of the round medians within a pass."""
    lines = [
        f"{'variant':<11} {'procs':>5} {'level us':>8} {'offset sd':>9} {'sd pass2':>8} "
        f"{'pass1~2 r':>9} {'rounds sd':>9} {'clock MHz':>12}  offsets of pass 1 (%)"
    ]
    for variant in VARIANTS:
        mine = [p for p in processes if p["variant"] == variant]
        if not mine:
            continue
        keys = sorted(mine[0]["passes"][0])
        levels = [
            {k: float(np.median([p["passes"][i][k]["median"] for p in mine])) for k in keys}
            for i in (0, 1)
        ]
        level = levels[0]
        offsets = np.array([[offset(p, i, levels[i]) for i in (0, 1)] for p in mine])
        rounds = [
            np.std(np.asarray(p["passes"][0][k]["rounds"]) / level[k]) for p in mine for k in keys
        ]
        clocks = [p["passes"][0][k]["clock"] for p in mine for k in keys]
        clocks = [c for c in clocks if c]
        r = np.corrcoef(offsets[:, 0], offsets[:, 1])[0, 1] if len(mine) > 2 else float("nan")
        clock = f"{min(clocks):.0f}-{max(clocks):.0f}" if clocks else "-"
        lines.append(
            f"{variant:<11} {len(mine):>5} {np.mean(list(level.values())):>8.3f} "
            f"{np.std(offsets[:, 0]):>8.2%} {np.std(offsets[:, 1]):>7.2%} {r:>9.2f} "
            f"{np.mean(rounds):>8.2%} {clock:>12}  " + " ".join(f"{o:+.1%}" for o in offsets[:, 0])
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, nargs="?")
    p.add_argument("--table", type=Path)
    p.add_argument("--processes", type=int, default=6)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    if args.table:
        raw = args.table.read_bytes()
        saved = json.loads(gzip.decompress(raw) if args.table.suffix == ".gz" else raw)
        print(table(saved["processes"]))
        return 0
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not args.out:
        p.error(f"unknown variants {unknown}" if unknown else "give OUT.json")
    processes = []
    with tempfile.TemporaryDirectory() as tmp:
        build = build_base(Path(tmp))
        env = {**os.environ, "KERNELWATCH_BUILD_DIR": str(build)}
        for i in range(args.processes):
            for variant in variants:
                done = subprocess.run(
                    [sys.executable, "-m", "benchmarks.short_processes", "--child", variant],
                    cwd=ROOT, env=env, check=True, capture_output=True, text=True,
                )  # fmt: skip
                processes.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"process {i + 1}/{args.processes} {variant} done", flush=True)
            args.out.write_text(json.dumps({"processes": processes}))
    print(table(processes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

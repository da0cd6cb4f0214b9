"""Does a few-microsecond kernel's CUPTI time carry the L2 flush before it?

The runner flushes L2 with a memset and enqueues the launch right behind it; the history's
truth instrument (benchmarks/history_truth.py) synchronizes between the two. On the H100 the
runner's short streaming kernels read 4.0-4.2 us where the truth read 3.92 us, and both
instruments agreed on a change in microseconds (+1.59 us for w11's step) while their relative
changes differed by 2.5 points (+38.0% against +40.5%): an additive offset. This benchmark
times the history suite's four short kernels, base and step builds interleaved (A B / B A), on
16 fresh placements in each of several fresh processes, under four conditions: the runner's
flush (runner.measure.timers.L2Flush) or the truth's 256 MiB memset, each with the launch
enqueued right behind it or after a device synchronize. CUPTI kernel records time every sample
(runner.measure.timers.KernelActivity).

    python -m benchmarks.flush_gap [--processes 6] [--out OUT.json.gz]
    python -m benchmarks.flush_gap --table benchmarks/results/flush_gap_h100.json.gz

Prints per condition and workload: base and head us (interquartile means of all samples), the
change, and how the processes differ (their relative change, their change in us, their base,
and how the relative change follows the base). Measuring needs a GPU host (CuPy, nvcc,
cupti-python); `--table` runs anywhere.
"""

from __future__ import annotations

import argparse
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
SUITE = ROOT / "benchmarks" / "history_suite"
sys.path[:0] = [str(ROOT), str(SUITE)]

from benchmarks.history_gpu import STEP, extra_header  # noqa: E402
from benchmarks.history_truth import central  # noqa: E402

CONDITIONS = ("runner", "runner+sync", "truth", "truth+sync")
TRUTH_FLUSH_BYTES = 256 << 20
PLACEMENTS = 16
ROUNDS = 2
SAMPLES = 8
WARMUP = 5
FILLER_MAX_BYTES = 192 << 20
CONTEXT_FILLER_MAX_BYTES = 1 << 30


def build(out: Path) -> dict[str, str]:
    """The suite's base build and its first step's, each from a copy of the suite."""
    from histsuite.build import build as nvcc_build

    folders = {}
    for name, extras in (("base", {}), ("head", STEP)):
        cuda = out / f"src_{name}"
        shutil.copytree(SUITE / "histsuite" / "cuda", cuda)
        (cuda / "extra.h").write_text(extra_header(extras))
        nvcc_build(out / name, cuda=cuda)
        folders[name] = str(out / name)
    return folders


def one_process(builds: dict[str, str]) -> dict[str, Any]:
    """One fresh process's samples: per condition and short workload, base and head (us)."""
    import cupy as cp
    from histsuite.workloads import stream_workloads

    from runner.measure.timers import KernelActivity, L2Flush, busy_ns

    rng = np.random.default_rng()
    context_filler = cp.empty(int(rng.integers(1, CONTEXT_FILLER_MAX_BYTES >> 20)) << 20, cp.uint8)
    runner_flush = L2Flush()
    truth_buffer = cp.empty(TRUTH_FLUSH_BYTES, dtype=cp.uint8)

    def truth_flush() -> None:
        stream = cp.cuda.get_current_stream().ptr
        cp.cuda.runtime.memsetAsync(truth_buffer.data.ptr, 0, TRUTH_FLUSH_BYTES, stream)

    flushes = {"runner": runner_flush, "truth": truth_flush}
    modules = {side: cp.RawModule(path=str(Path(folder) / "stream.cubin"))
               for side, folder in builds.items()}  # fmt: skip
    activity = KernelActivity()
    activity.enable()
    synchronize = cp.cuda.Device().synchronize

    def sample(launch: Any, condition: str) -> float:
        flushes[condition.split("+")[0]]()
        if condition.endswith("+sync"):
            synchronize()
        launch()
        synchronize()
        return busy_ns(activity.drain()) / 1e3

    out: dict[str, Any] = {c: {} for c in CONDITIONS}
    pool = cp.get_default_memory_pool()
    for w in [w for w in stream_workloads() if w.timing_method == "cupti"]:
        taken = {c: {"base": [], "head": []} for c in CONDITIONS}
        held = []
        for _ in range(PLACEMENTS):
            pool.free_all_blocks()
            filler = cp.empty(int(rng.integers(1, FILLER_MAX_BYTES >> 16)) << 16, cp.uint8)
            instance = w.prepare(1)
            held.append((filler, instance))
            launch = {side: instance.launcher(m) for side, m in modules.items()}
            for side in launch:
                for _ in range(WARMUP):
                    launch[side]()
            synchronize()
            activity.drain()
            for condition in rng.permutation(CONDITIONS):
                for r in range(ROUNDS):
                    for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                        taken[condition][side] += [
                            sample(launch[side], condition) for _ in range(SAMPLES)
                        ]
        for _, instance in held:
            instance.close()
        del held
        for c in CONDITIONS:
            out[c][w.id] = taken[c]
    del context_filler
    return out


def summary(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per condition and workload: the change of the central values of all the processes'
    samples, and each process's central base and head (us)."""
    table: dict[str, Any] = {}
    for c in CONDITIONS:
        for wid in parts[0][c]:
            base = [s for p in parts for s in p[c][wid]["base"]]
            head = [s for p in parts for s in p[c][wid]["head"]]
            table.setdefault(c, {})[wid] = {
                "base_us": central(base), "head_us": central(head),
                "change": central(head) / central(base) - 1,
                "process_base_us": [central(p[c][wid]["base"]) for p in parts],
                "process_head_us": [central(p[c][wid]["head"]) for p in parts],
            }  # fmt: skip
    return table


def render(table: dict[str, Any]) -> str:
    """The table, with how the processes differ: in the relative change, in the change in us,
    and in the base time, and how the first follows the last."""
    lines = [
        "| condition | workload | base us | head us | change | sd of the processes' change "
        "| ... of their change in us | ... of their base us | r(base, change) |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for c, rows in table.items():
        for wid, r in rows.items():
            b, h = np.array(r["process_base_us"]), np.array(r["process_head_us"])
            relative = h / b - 1
            lines.append(
                f"| {c} | {wid} | {r['base_us']:.3f} | {r['head_us']:.3f} | {r['change']:+.2%} "
                f"| {np.std(relative, ddof=1):.2%} | {np.std(h - b, ddof=1):.3f} "
                f"| {np.std(b, ddof=1):.3f} | {np.corrcoef(b, relative)[0, 1]:+.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--out", type=Path, help="keep every sample here (.json.gz)")
    parser.add_argument("--table", type=Path, help="print the table of a kept result")
    parser.add_argument("--one", nargs=2, metavar=("BUILDS_JSON", "PART"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.table:
        print(render(summary(json.loads(gzip.decompress(args.table.read_bytes()))["parts"])))
        return 0
    if args.one:
        builds = json.loads(Path(args.one[0]).read_text())
        Path(args.one[1]).write_text(json.dumps(one_process(builds)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        builds = build(work)
        (work / "builds.json").write_text(json.dumps(builds))
        parts = []
        for i in range(args.processes):
            part = work / f"part{i}.json"
            one = [sys.executable, "-m", "benchmarks.flush_gap", "--one", str(work / "builds.json")]
            subprocess.run([*one, str(part)], cwd=ROOT, check=True)
            parts.append(json.loads(part.read_text()))
            print(f"process {i + 1} of {args.processes} done", flush=True)
    if args.out:
        args.out.write_bytes(gzip.compress(json.dumps({"parts": parts}).encode()))
    print(render(summary(parts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

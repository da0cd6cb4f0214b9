"""Build, check and time every workload of the kernel suite on the local GPU; print a table.

    python benchmarks/kernel_suite.py [--match gemm_fwd] [--tag smoke] [--json out.json]

Timing: CUDA events around each launch after a warm-up, the L2 flushed (a write of >= 2x its
size) before every sample, median of the samples. Never run this under ncu.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernels import build as kbuild
from kernels.check import run_check
from kernels.device import KernelLibrary
from kernels.timing import L2Flusher, TracedLibrary, summary, time_launch
from kernels.workloads import select


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--match", help="only workloads whose id contains this")
    p.add_argument("--tag", action="append", default=[], help="only workloads with this tag")
    p.add_argument("--samples", type=int, default=100, help="at most this many samples")
    p.add_argument("--budget", type=float, default=1.5, help="seconds of samples per workload")
    p.add_argument("--build-dir", help="where the cubins go (default: a temporary dir)")
    p.add_argument("--arch", help="e.g. sm_90 (default: the GPU's)")
    p.add_argument("--define", action="append", default=[], help="-D for nvcc, e.g. X=1")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--json", help="write every number here")
    return p.parse_args(argv)


def print_build(result: kbuild.BuildResult) -> None:
    print(f"build: {result.compiler} {result.compiler_version} for {result.arch}")
    print(f"{'kernel':24} {'regs':>5} {'smem B':>7} {'stack':>6} {'spill st/ld':>12} {'file s':>7}")
    for k in result.kernels.values():
        spill = f"{k.spill_store_bytes}/{k.spill_load_bytes}"
        print(
            f"{k.kernel:24} {k.registers!s:>5} {k.shared_bytes!s:>7} {k.stack_bytes!s:>6} "
            f"{spill:>12} {k.compile_s:>7.2f}"
        )


def fmt_rate(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{value:8.2f} {unit}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workloads = select(tuple(args.tag), args.match)
    build_dir = args.build_dir or tempfile.mkdtemp(prefix="kernel-suite-")
    if kbuild.find_nvcc():
        result = kbuild.build(build_dir, args.arch, defines=tuple(args.define))
    else:
        result = kbuild.build_nvrtc(defines=tuple(args.define))
    print_build(result)
    lib = KernelLibrary(result)
    flusher = L2Flusher()
    print(f"L2 {flusher.l2_bytes >> 20} MiB, flush buffer {flusher.nbytes >> 20} MiB\n")

    rows = []
    for w in workloads:
        t0 = time.perf_counter()
        row = {"workload": w.to_dict()}
        if not args.no_check:
            verdict, detail = run_check(w, seed=0, library=lib)
            row["check"], row["check_detail"] = verdict, detail
        inst = w.prepare(seed=1, library=lib)
        try:
            samples = time_launch(
                inst.launch, samples=args.samples, warmup=3, flush=flusher, budget_s=args.budget
            )
            if w.name == "train_step":
                traced = TracedLibrary(lib)
                inst.lib = traced
                inst.launch()
                row["kernel_breakdown"] = traced.breakdown()
        finally:
            inst.close()
        row["timing"] = summary(samples)
        row["samples_ms"] = samples
        rows.append(row)
        c = row.get("check", {})
        print(
            f"{w.id}: {row['timing']['median_ms']:.4f} ms  check "
            f"{'PASS' if c.get('passed') else 'FAIL' if c else '-'} "
            f"err={c.get('error_norm', math.nan):.2e} unwritten={c.get('unwritten', '-')} "
            f"({time.perf_counter() - t0:.1f} s)",
            flush=True,
        )
        if c and not c["passed"]:
            print("   detail:", json.dumps(row["check_detail"]))

    if args.json:
        Path(args.json).write_text(json.dumps({"build": result.to_dict(), "rows": rows}, indent=1))
    print_breakdowns(rows)
    print_table(rows)
    return 0 if all(r.get("check", {}).get("passed", True) for r in rows) else 1


def print_breakdowns(rows: list[dict]) -> None:
    for r in rows:
        if "kernel_breakdown" in r:
            print(f"\nkernel time of one {r['workload']['id']} (events around each launch):")
            for name, b in sorted(r["kernel_breakdown"].items(), key=lambda x: -x[1]["total_ms"]):
                print(f"  {name:24} calls={b['calls']}  {b['total_ms']:9.4f} ms  {b['share']:6.1%}")


def print_table(rows: list[dict]) -> None:
    cublas = {
        (r["workload"]["params"]["m"], r["workload"]["params"]["n"], r["workload"]["params"]["k"]):
        r["timing"]["median_ms"]
        for r in rows
        if r["workload"]["name"] == "cublas_gemm"
    }  # fmt: skip
    print(f"\n{'workload':66} {'median ms':>10} {'TFLOP/s':>9} {'GB/s':>9} {'% cuBLAS':>9} check")
    for r in rows:
        w, ms = r["workload"], r["timing"]["median_ms"]
        tflops = w["flops"] / ms / 1e9 if w["flops"] else None
        gbs = w["bytes"] / ms / 1e6
        pct = "-"
        p = w["params"]
        base = cublas.get((p.get("m"), p.get("n"), p.get("k")))
        if base and w["name"] in ("gemm_fwd", "gemm_fwd_tf32"):
            pct = f"{100 * base / ms:.1f}%"
        elif base and w["name"] == "gemm_bwd":
            pct = f"{100 * 2 * base / ms:.1f}%*"
        c = r.get("check")
        verdict = "-"
        if c is not None:
            verdict = ("pass" if c["passed"] else "FAIL") + f" {c['error_norm']:.1e}"
        print(f"{w['id']:66} {ms:10.4f} {fmt_rate(tflops, ''):>9} {gbs:9.1f} {pct:>9} {verdict}")
    print("* gemm_bwd against two cuBLAS GEMMs of its shape (its two products)")


if __name__ == "__main__":
    raise SystemExit(main())

"""The recording half of benchmarks/signal_quality_gpu.py: runs on the GPU host, never imports
the service (NumPy, CuPy, the runner and the suite only)."""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import signal_quality_workloads as sqw  # noqa: E402

FORMAT = "kernelwatch-signal-quality-gpu/1"
WORKLOADS_MODULE = "benchmarks.signal_quality_workloads"
CALIBRATION_STEPS = (0.04, 0.08, 0.12, 0.16)
CALIBRATION_PROCESSES = 6


def log(line: str) -> None:
    print(line, flush=True)


# --------------------------------------------------------------------------------------------
# Recording (GPU host: NumPy, CuPy, the runner and the suite; never the service)
# --------------------------------------------------------------------------------------------


def _suite(timing: Any) -> Any:
    from runner.suite.load import Suite

    return Suite(
        root=ROOT,
        name="signal-quality",
        workloads=WORKLOADS_MODULE,
        device="cuda",
        timing=timing,
    )


def _build(build_dir: Path, arch: str | None) -> dict[str, Any]:
    """The suite's dropout source with nvcc, as `python -m kernels.build` does (only the one
    source this harness launches: the others would cost a minute of build for nothing)."""
    code = (
        "import sys; from kernels.build import build, write_manifest; "
        "r = build(sys.argv[1], sys.argv[2] or None, only=('dropout.cu',)); "
        "print(write_manifest(r)); print(r.compiler, r.compiler_version, r.arch)"
    )
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(build_dir), arch or ""],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"build failed:\n{proc.stdout}\n{proc.stderr}")
    return {"seconds": round(time.monotonic() - started, 2), "log": proc.stdout.strip()[-2000:]}


def _write_plan(build_dir: Path, plan: dict[str, Any], name: str) -> Path:
    path = build_dir / name
    path.write_text(json.dumps(plan, indent=1))
    return path


def _time_processes(
    suite: Any,
    plan: dict[str, Any],
    plan_path: Path,
    build_dir: Path,
    processes: int,
    rng: random.Random,
) -> dict[str, Any]:
    """One run of every workload of `plan`: `processes` worker processes (seeds 0..n-1, as the
    runner's timing processes), each timing every workload, in a shuffled order."""
    from runner.measure.phase import run_phase

    ids = [w.id for w in sqw.plan_workloads(plan)]
    env = {"KERNELWATCH_BUILD_DIR": str(build_dir), sqw.PLAN_ENV: str(plan_path)}
    out: dict[str, Any] = {"order": [], "results": {wid: [] for wid in ids}, "errors": []}
    for process in range(processes):
        order = ids[:]
        rng.shuffle(order)
        out["order"].append(order)
        phase = run_phase(suite, "time", order, env=env, seed=process)
        for wid in ids:
            outcome = phase.outcomes.get(wid)
            if outcome is None or outcome.status != "ok" or outcome.result is None:
                status = outcome.status if outcome else "missing"
                error = (outcome.error if outcome else phase.stderr_tail)[-1500:]
                out["errors"].append(
                    {"id": wid, "process": process, "status": status, "error": error}
                )
                out["results"][wid].append(None)
                continue
            result = {k: v for k, v in outcome.result.items() if k != "timeline"}
            result["samples"] = [round(float(s), 5) for s in result["samples"]]
            out["results"][wid].append(result)
    return out


def _run_median(results: list[dict[str, Any] | None]) -> float | None:
    if any(r is None for r in results):
        return None
    return float(np.median(np.concatenate([r["samples"] for r in results])))


def calibrate(
    suite: Any, build_dir: Path, rng: random.Random, steps: tuple[float, ...] = CALIBRATION_STEPS
) -> dict[str, Any]:
    """How each class's time grows with its work: the base and (1 + step)-scaled sizes, timed
    in the same processes (each process's time ratios to its base); each magnitude's work is
    read off a quadratic fitted to all of them (signal_quality_workloads.work_for_time)."""
    plan = sqw.calibration_plan(steps)
    path = _write_plan(build_dir, plan, "sq-calibration-plan.json")
    timed = _time_processes(suite, plan, path, build_dir, CALIBRATION_PROCESSES, rng)
    by_class: dict[str, Any] = {}
    for c in plan["classes"]:
        ids = {
            float(m): sqw.InjectedDropout(c["key"], float(m), int(n)).id for m, n in c["n"].items()
        }
        base = timed["results"][ids[0.0]]
        points = []  # (work scale, time ratio) of every process
        for step in steps:
            points += [
                (1 + step, float(np.median(s["samples"]) / np.median(b["samples"])))
                for b, s in zip(base, timed["results"][ids[step]], strict=True)
                if b and s
            ]
        if not points:
            raise SystemExit(f"calibration of {c['name']} failed: {timed['errors'][:1]}")
        a, b2 = sqw.fit_curve(points)
        scales = {x: sqw.work_for_time(points, 1 + x) for x in sqw.MAGNITUDES}
        by_class[c["key"]] = {
            "points": points,
            "fit": [a, b2],
            "fitted": [a * s + b2 * s * s for s in steps],  # time change at each step
            "scales": {f"{x:g}": s for x, s in scales.items()},
            # d(time)/d(work) over the largest step, for the record's header
            "elasticity": (a * steps[-1] + b2 * steps[-1] ** 2) / steps[-1],
        }
    return {
        "steps": list(steps),
        "processes": CALIBRATION_PROCESSES,
        "classes": by_class,
        "errors": timed["errors"],
    }


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = out.stdout.strip()
    if not sha:
        return None
    dirty = subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    ).stdout.strip()
    return f"{sha}+dirty" if dirty else sha


def record(args: argparse.Namespace) -> int:
    from runner.host import environment
    from runner.measure.phase import run_phase
    from runner.suite.load import load_suite

    started = time.monotonic()
    budget = float(args.budget)
    rng = random.Random(args.seed)
    timing = load_suite(ROOT).timing  # the suite's own [timing] from kernelwatch.toml
    if args.processes:
        timing = replace(timing, processes=args.processes)
    suite = _suite(timing)
    build_dir = Path(args.build_dir or tempfile.mkdtemp(prefix="kw-sq-build-"))
    build_dir.mkdir(parents=True, exist_ok=True)
    log(
        f"signal quality (GPU): budget {budget:.0f} s, {timing.processes} processes per run, "
        f"timing {asdict(timing)}"
    )
    build = _build(build_dir, args.arch)
    log(f"[{time.monotonic() - started:6.1f} s] built dropout.cu in {build['seconds']} s")
    env = {"KERNELWATCH_BUILD_DIR": str(build_dir)}
    listing = run_phase(suite, "list", [], env=env)
    env_section = environment.collect("cuda", listing.device)
    gpu = env_section.get("gpu", {}).get("name", "?")
    log(
        f"[{time.monotonic() - started:6.1f} s] {gpu}, driver {env_section.get('driver_version')}"
        f", clocks {env_section.get('clocks_mhz')}"
    )

    if args.inject == "time":
        calibration = calibrate(suite, build_dir, rng)
        scales = {
            k: {float(x): s for x, s in v["scales"].items()}
            for k, v in calibration["classes"].items()
        }
        shown = "; ".join(
            f"{k} "
            + ", ".join(
                f"{w:+.0%} work: {r:+.1%}"
                for w, r in zip(CALIBRATION_STEPS, v["fitted"], strict=True)
            )
            for k, v in calibration["classes"].items()
        )
        log(f"[{time.monotonic() - started:6.1f} s] calibration (time change): {shown}")
        plan = sqw.make_plan(scales)
    else:
        calibration = None
        plan = sqw.default_plan()
    plan_path = _write_plan(build_dir, plan, "sq-plan.json")
    for c in plan["classes"]:
        log(f"  {c['name']:<9} n: " + ", ".join(f"{m}={n}" for m, n in c["n"].items()))

    rounds: list[dict[str, Any]] = []
    last = 0.0
    while len(rounds) < args.max_rounds:
        elapsed = time.monotonic() - started
        # Start a round only if it should end inside the budget (the last one's length, +10%).
        if rounds and elapsed + 1.1 * last > budget:
            break
        t0 = time.monotonic()
        timed = _time_processes(suite, plan, plan_path, build_dir, timing.processes, rng)
        last = time.monotonic() - t0
        timed.update(
            {"index": len(rounds), "started_s": round(t0 - started, 2), "seconds": round(last, 2)}
        )
        rounds.append(timed)
        parts = []
        for c in plan["classes"]:
            base = sqw.InjectedDropout(c["key"], 0.0, c["n"]["0"]).id
            top = sqw.InjectedDropout(c["key"], 0.1, c["n"]["0.1"]).id
            b, t = _run_median(timed["results"][base]), _run_median(timed["results"][top])
            parts.append(
                f"{c['key']} {b:.2f} us (+10%: {t / b - 1:+.1%})"
                if b and t
                else f"{c['key']} failed"
            )
        log(
            f"[{time.monotonic() - started:6.1f} s] round {len(rounds)} in {last:.1f} s: "
            f"{'; '.join(parts)}" + (f"; {len(timed['errors'])} errors" if timed["errors"] else "")
        )
        if timed["errors"]:
            log(timed["errors"][0]["error"][-800:])

    document = {
        "format": FORMAT,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "host": {"hostname": platform.node(), "python": platform.python_version()},
        "environment": env_section,
        "timing": asdict(timing),
        "processes": timing.processes,
        "inject": args.inject,
        "budget_s": budget,
        "build": build,
        "calibration": calibration,
        "plan": plan,
        "workloads_module": WORKLOADS_MODULE,
        "rounds": rounds,
        "wall_s": round(time.monotonic() - started, 1),
    }
    out = Path(args.record)
    out.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(out, "wt") as f:
        json.dump(document, f, separators=(",", ":"))
    if not args.build_dir:
        shutil.rmtree(build_dir, ignore_errors=True)
    log(
        f"[{document['wall_s']:6.1f} s] wrote {out}: {len(rounds)} rounds x "
        f"{timing.processes} processes"
    )
    return 0 if rounds else 1

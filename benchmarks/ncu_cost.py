"""Where the runner's ncu pass spends its time, on a GPU host (issue 16, item 5).

    python -m benchmarks.ncu_cost [--only REGEX] [--variant NAME ...] [--json FILE]
    python -m benchmarks.ncu_cost --table FILE
    python -m benchmarks.ncu_cost --floor [--launches N]

Builds the default suite once, then runs runner.profile.ncu_pass's one ncu pass (the runner's own
command, `profile_command`) over the selected workloads once per variant, reading ncu's output
as it comes, and its details export after. Per variant: the seconds of the pass and of the
export, the launches profiled and their replay passes. Per workload (first variant): the
seconds from its worker's "start" to its "result", its launches and their passes. The variant
"bare" runs the profile worker without ncu: what preparing and launching the workloads cost on
their own. Nothing is timed under ncu; this times ncu.

`--floor` prices one profiled launch where nothing else costs anything: a process that launches
a one-block kernel N times, under the runner's metrics and sections, the metrics alone, and one
metric; per variant the replay passes and the median seconds between two launches' `==PROF==`
lines, per launch and per pass. A pass over the suite costs at least its launches times that.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.host.tools import find_ncu
from runner.measure.phase import run_phase
from runner.profile import ncu, ncu_pass, timeline
from runner.suite.build import run_build
from runner.suite.load import load_suite

ROOT = Path(__file__).resolve().parents[1]
_PASSES = re.compile(r"==PROF== Profiling \"([^\"]*)\".*?(\d+) pass")
FLOOR_PROGRAM = """\
import sys
import cupy
kernel = cupy.RawKernel('extern "C" __global__ void kernelwatch_floor(float* x) '
                        '{ x[threadIdx.x] += 1.0f; }', "kernelwatch_floor")
x = cupy.zeros(256, dtype=cupy.float32)
for _ in range(int(sys.argv[1])):
    kernel((1,), (256,), (x,))
    cupy.cuda.Device().synchronize()
"""


def variants(exe: str, config: Path, report: Path, count: int) -> dict[str, list[str]]:
    """name -> command. Each changes one thing of the runner's command."""
    runner = ncu_pass.profile_command(exe, config, report, count)
    worker = [sys.executable, "-m", "runner.worker", str(config)]
    budget = ncu_pass.LAUNCHES_PER_WORKLOAD * max(count, 1)
    one = ncu.ncu_command(worker, report=report, launch_count=budget,
                          metrics=("gpu__time_duration.sum",), sections=(), ncu=exe)  # fmt: skip
    return {
        "runner": runner,
        "metrics-only": ncu_pass.profile_command(exe, config, report, count, sections=()),
        "sections-only": _without_metrics(runner),
        "no-cache-flush": [runner[0], "--cache-control", "none", *runner[1:]],
        "one-metric": [one[0], "--nvtx", *one[1:]],
        "bare": worker,
    }


def _without_metrics(cmd: list[str]) -> list[str]:
    out, skip = [], False
    for arg in cmd:
        if skip:
            skip = False
            continue
        if arg == "--metrics":
            skip = True
            continue
        out.append(arg)
    return out


def run_variant(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run one command, stamping every output line; what it says per workload and launch."""
    started = time.monotonic()
    stamped, returncode = _stamped(cmd, cwd, env)
    seconds = time.monotonic() - started
    workloads: dict[str, dict[str, Any]] = {}
    current: str | None = None
    for at, line in stamped:
        if line.startswith('{"event"'):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("event") == "start":
                current = message["id"]
                workloads[current] = {"start": at, "end": None, "launches": 0, "passes": 0,
                                      "kernels": {}}  # fmt: skip
            elif message.get("event") in ("result", "error") and current in workloads:
                workloads[current]["end"] = at
                workloads[current]["status"] = message["event"]
        elif (match := _PASSES.search(line)) and current in workloads:
            w = workloads[current]
            w["launches"] += 1
            w["passes"] += int(match.group(2))
            w["kernels"][match.group(1)] = w["kernels"].get(match.group(1), 0) + 1
    first = next((at for at, _ in stamped), seconds)
    return {
        "command": cmd, "returncode": returncode, "seconds": seconds,
        "first_output_s": first, "workloads": workloads,
        "tail": [line for _, line in stamped[-15:]],
    }  # fmt: skip


def measure(only: str | None, names: list[str]) -> dict[str, Any]:
    exe = find_ncu()
    if exe is None:
        raise SystemExit("ncu not found")
    suite = load_suite(ROOT)
    out: dict[str, Any] = {"variants": {}}
    with tempfile.TemporaryDirectory(prefix="kw-ncu-cost-") as tmp:
        build_dir = Path(tmp) / "build"
        env = {"KERNELWATCH_BUILD_DIR": str(build_dir)}
        build = run_build(suite, build_dir, env)
        if build.status != "ok":
            raise SystemExit(f"build {build.status}: {build.log_tail[-2000:]}")
        listing = run_phase(suite, "list", [], env=env)
        ids = [w["id"] for w in listing.listing if suite.selects(w, only)]
        config, report = Path(tmp) / "worker.json", Path(tmp) / "profile"
        config.write_text(json.dumps(ncu_pass.worker_config(suite, ids)))
        commands = variants(exe, config, report, len(ids))
        child = timeline.child_env(suite, env)
        for name in names:
            result = run_variant(commands[name], suite.root, child)
            rep = Path(f"{report}.ncu-rep")
            if rep.is_file():
                started = time.monotonic()
                done = subprocess.run(ncu.export_command(rep, "details", ncu=exe),
                                      capture_output=True, text=True)  # fmt: skip
                result["export_s"] = time.monotonic() - started
                result["report_mb"] = rep.stat().st_size / 1e6
                sections = ncu_pass.sections(ids, done.stdout, "", "ok", "")
                result["ncu_status"] = {s["status"] for s in sections.values()}.__repr__()
                rep.unlink()
            out["variants"][name] = result
            print(f"{name}: {result['seconds']:.1f} s rc {result['returncode']}", flush=True)
    out["ids"] = ids
    return out


def floor(launches: int) -> list[str]:
    """The cost of one profiled launch of a trivial kernel, per variant (see the docstring)."""
    exe = find_ncu()
    if exe is None:
        raise SystemExit("ncu not found")
    rows = ["| variant | passes | ms per launch | ms per pass |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="kw-ncu-floor-") as tmp:
        program = Path(tmp) / "floor.py"
        program.write_text(FLOOR_PROGRAM)
        run = [sys.executable, str(program), str(launches)]
        report = Path(tmp) / "floor"
        commands = {
            "runner": ncu.ncu_command(run, report=report, launch_count=launches, ncu=exe,
                                      sections=ncu_pass.SECTIONS),
            "metrics-only": ncu.ncu_command(run, report=report, launch_count=launches,
                                            ncu=exe, sections=()),
            "one-metric": ncu.ncu_command(run, report=report, launch_count=launches, ncu=exe,
                                          metrics=("gpu__time_duration.sum",), sections=()),
        }  # fmt: skip
        for name, cmd in commands.items():
            stamps = [(at, int(m.group(2))) for at, line in _stamped(cmd)[0]
                      if (m := _PASSES.search(line))]  # fmt: skip
            gaps = [b - a for (a, _), (b, _) in itertools.pairwise(stamps)]
            if not gaps:
                rows.append(f"| {name} | - | no launches profiled | - |")
                continue
            per, passes = statistics.median(gaps), stamps[-1][1]
            rows.append(f"| {name} | {passes} | {per * 1e3:.1f} | {per * 1e3 / passes:.1f} |")
    return rows


def _stamped(
    cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[list[tuple[float, str]], int]:
    """Every line the command printed (stdout and stderr), with the seconds since its start
    when it came; and its exit code."""
    started = time.monotonic()
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:  # fmt: skip
        assert proc.stdout is not None
        lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stdout]
    return lines, proc.returncode


def table(data: dict[str, Any]) -> list[str]:
    rows = ["| variant | pass s | export s | launches | passes | s per launch |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for name, v in data["variants"].items():
        launches = sum(w["launches"] for w in v["workloads"].values())
        passes = sum(w["passes"] for w in v["workloads"].values())
        per = v["seconds"] / launches if launches else 0.0
        rows.append(f"| {name} | {v['seconds']:.1f} | {v.get('export_s', 0.0):.1f} | "
                    f"{launches} | {passes} | {per:.3f} |")  # fmt: skip
    first = next(iter(data["variants"].values()), None)
    if first:
        rows += ["", "| workload | s | launches | passes | kernels |", "|---|---|---|---|---|"]
        spans = []
        for wid, w in first["workloads"].items():
            if w.get("end") is not None:
                spans.append((w["end"] - w["start"], wid, w))
        for seconds, wid, w in sorted(spans, key=lambda x: x[0], reverse=True):
            kernels = ", ".join(f"{k}x{n}" for k, n in w["kernels"].items())
            rows.append(f"| {wid} | {seconds:.2f} | {w['launches']} | {w['passes']} | "
                        f"{kernels[:120]} |")  # fmt: skip
        last = max((w["end"] or 0.0) for w in first["workloads"].values())
        rows.append(f"first output after {first['first_output_s']:.1f} s; "
                    f"last workload done at {last:.1f} s")  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="regular expression over workload ids (default: all)")
    parser.add_argument("--variant", action="append", help="runner, metrics-only, "
                        "sections-only, no-cache-flush, one-metric, bare (default: all "
                        "but one-metric)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the measurements here (.json.gz)")
    parser.add_argument("--table", type=Path, help="print the table of a recording")
    parser.add_argument("--floor", action="store_true", help="the cost of one profiled launch")
    parser.add_argument("--launches", type=int, default=20, help="launches of --floor")
    args = parser.parse_args(argv)
    if args.floor:
        print("\n".join(floor(max(args.launches, 3))))
        return 0
    if args.table:
        data = json.loads(gzip.decompress(args.table.read_bytes()))
    else:
        names = args.variant or ["runner", "bare", "metrics-only", "sections-only",
                                 "no-cache-flush"]  # fmt: skip
        data = measure(args.only, names)
        if args.json:
            args.json.write_bytes(gzip.compress(json.dumps(data).encode()))
    print("\n".join(table(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

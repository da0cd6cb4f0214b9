"""Which ncu counters are steady enough to be series of their own (issue 15, item 6).

    python -m benchmarks.work_counters OUT.json     # GPU host: CuPy, nvcc, ncu

The history suite's four short streaming kernels (1M floats, a few microseconds each) are
built five times: as they are, and reading 0.5%, 1%, 2.5% and 5% more bytes (the pad reads of
histsuite/cuda/extra.h). Each build is profiled in PROCESSES fresh processes under ncu
(`--cache-control all`, clocks untouched), LAUNCHES launches per kernel, with the candidate
counters below. Printed per counter: how much it varies within one build (across processes
and launches), and how much it moved per injected change: a counter qualifies when its
variation is far below the smallest change it has to show.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "history_suite"))

from histsuite.workloads import stream_workloads as all_workloads  # noqa: E402

COUNTERS = (
    "smsp__inst_executed.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "lts__t_sectors.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
)
EXTRAS = (0.0, 0.005, 0.01, 0.025, 0.05)  # more bytes read, as a fraction of 8 n
SHORT = [w for w in all_workloads() if w.params["cls"] == "short"]
PROCESSES = 3
LAUNCHES = 5


def launch(build: str) -> None:
    import cupy
    import histsuite.workloads as hw

    hw._module = cupy.RawModule(path=str(Path(build) / hw.CUBIN))
    for w in SHORT:
        instance = w.prepare(0)
        for _ in range(LAUNCHES):
            instance.launch()
        cupy.cuda.Device().synchronize()
        instance.close()


def build(folder: Path, extra: float) -> str:
    from benchmarks.history_gpu import extra_header

    tree = folder / f"suite-{extra}"
    subprocess.run(["cp", "-r", str(ROOT / "benchmarks" / "history_suite"), str(tree)], check=True)
    extras = {w.params["w"]: extra for w in SHORT}
    (tree / "histsuite" / "cuda" / "extra.h").write_text(extra_header(extras))
    out = folder / f"build-{extra}"
    subprocess.run([sys.executable, "-m", "histsuite.build", "--out", str(out)], cwd=tree,
                   check=True, capture_output=True)  # fmt: skip
    return str(out)


def profile(build_dir: str) -> list[dict[str, Any]]:
    from runner.host.tools import find_ncu
    from runner.profile import ncu

    program = [sys.executable, "-m", "benchmarks.work_counters", "--launch", build_dir]
    cmd = ncu.ncu_command(program, metrics=COUNTERS, sections=(), kernel_regex="hist_w",
                          launch_count=len(SHORT) * LAUNCHES, ncu=find_ncu() or "ncu")  # fmt: skip
    cmd = [cmd[0], "--cache-control", "all", *cmd[1:]]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return ncu.parse_csv(done.stdout)


def spread(values: list[float]) -> float | None:
    """(max - min) / median; None where the median is 0 (a counter that stays at zero)."""
    middle = statistics.median(values) if values else 0.0
    return (max(values) - min(values)) / middle if middle else None


def table(values: dict[float, dict[str, dict[str, list[float]]]]) -> str:
    """Per counter: its spread within a build, and its move at each injected change (the
    kernels read 4 n bytes: the pad's 8 n * extra is 2 * extra more of what they read)."""
    extras = sorted(values)[1:]
    head = " | ".join(f"+{2 * e:.0%} bytes read" for e in extras)
    lines = [f"| counter | spread in one build | {head} |", "|---|--:|" + "--:|" * len(extras)]
    for name in COUNTERS:
        spreads = [spread(v[name]) for per in values.values() for v in per.values() if name in v]
        known = [s for s in spreads if s is not None]
        moved = []
        for extra in extras:
            changes = [
                statistics.median(values[extra][k][name]) / statistics.median(base[name]) - 1
                for k, base in values[0.0].items()
                if statistics.median(base.get(name) or [0.0]) and name in values[extra].get(k, {})
            ]
            moved.append(f"{statistics.mean(changes):+.2%}" if changes else "-")
        worst = f"{max(known):.2%}" if known else "median 0"
        lines.append(f"| {name} | {worst} | " + " | ".join(moved) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--launch":
        launch(argv[1])
        return 0
    if argv and argv[0] == "--table":  # again, from what a run saved
        saved = json.loads(Path(argv[1]).read_text())
        print(table({float(k): v for k, v in saved.items()}))
        return 0
    out = Path(argv[0])
    values: dict[float, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="kw-counters-") as tmp:
        for extra in EXTRAS:
            folder = build(Path(tmp), extra)
            per: dict[str, dict[str, list[float]]] = {}
            for _ in range(PROCESSES):
                for launch_ in profile(folder):
                    for name in COUNTERS:
                        value = launch_["metrics"].get(name, {}).get("value")
                        if isinstance(value, int | float):
                            per.setdefault(launch_["kernel"], {}).setdefault(name, []).append(
                                float(value)
                            )
            values[extra] = per
    out.write_text(json.dumps({str(k): v for k, v in values.items()}))
    print(table(values))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

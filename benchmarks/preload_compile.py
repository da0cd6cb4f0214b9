"""What importing torch.compile's modules ahead saves a timing process (runner.measure.preload
COMPILER): fresh processes, one after the other and alternating (not preloaded, preloaded, ...),
each compiling the doubt suite's block and calling it once, all with one Inductor cache warmed
by a process before them, as a runner's timing processes find it. Per process it prints the
seconds its imports took (what a waiting worker pays ahead) and the seconds from `torch.compile`
to the first result (what the prepare pays), and the medians of each kind.

    python -m benchmarks.preload_compile [--python PY] [--runs 3] [--size 1024] [--device cpu]

PY is a Python with torch (the service's own environment has none: on this machine, a venv
with `pip install torch==2.13.0`); --device cuda on a GPU host.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from runner.measure.preload import COMPILER

SUITE = Path(__file__).resolve().parent / "doubt_suite"
CHILD = """
import json, sys, time
started = time.perf_counter()
import torch
for module in {preload!r}:
    __import__(module)
imported = time.perf_counter()
sys.path.insert(0, {suite!r})
from doubt_kernels import block as module
n, device = {size}, {device!r}
x, r = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
gain = torch.rand(n, device=device) + 0.5
began = time.perf_counter()
torch.compile(module.block)(x, r, gain)
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({{"imports": imported - started, "first_call": time.perf_counter() - began}}))
"""


def one_process(python: str, preload: bool, size: int, device: str, cache: Path) -> dict:
    """One fresh process's {"imports": s, "first_call": s}."""
    code = CHILD.format(
        preload=list(COMPILER) if preload else [], suite=str(SUITE), size=size, device=device
    )
    env = {"TORCHINDUCTOR_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise RuntimeError(f"{python}: {said[-1] if said else f'exit {done.returncode}'}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[tuple[str, dict]]) -> str:
    """The processes in order, then the medians per kind."""
    lines = [f"{'process':<16} {'imports s':>10} {'compile+call s':>15}"]
    for i, (kind, r) in enumerate(rows):
        lines.append(f"{f'{i + 1} {kind}':<16} {r['imports']:>10.2f} {r['first_call']:>15.2f}")
    for kind in dict.fromkeys(k for k, _ in rows):
        mine = [r for k, r in rows if k == kind]
        imports = statistics.median(r["imports"] for r in mine)
        call = statistics.median(r["first_call"] for r in mine)
        lines.append(f"{f'median {kind}':<16} {imports:>10.2f} {call:>15.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.size < 1:
        parser.error("--runs and --size must be at least 1")
    with tempfile.TemporaryDirectory(prefix="kw-preload-") as cache:
        try:
            one_process(args.python, False, args.size, args.device, Path(cache))  # warms it
            rows = []
            for _ in range(args.runs):
                for kind, ahead in (("cold", False), ("preloaded", True)):
                    rows.append((kind, one_process(args.python, ahead, args.size, args.device,
                                                   Path(cache))))  # fmt: skip
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            print(f"preload_compile: {exc}", file=sys.stderr)
            return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

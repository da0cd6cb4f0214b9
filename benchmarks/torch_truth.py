"""The truth of the PyTorch/Triton benchmark (benchmarks/torch_gpu.py): a commit's kernels and
its parent's, both loaded in one process, timed interleaved (A B, then B A, round after round),
L2 flushed before every sample, the whole repeated in PROCESSES fresh processes. Its own code: it
shares with the runner only the suite's kernel sources (the Triton module and the CUDA operator's
.cu file), which it loads and builds itself, under names of its own.

    python -m benchmarks.torch_truth SPEC.json OUT.json

SPEC.json: {"pairs": {NAME: {"base": TREE, "head": TREE, "workloads": [ID, ...]}}} where a TREE
is a checkout of the example suite (docs/example-suite-torch). OUT.json: per pair and workload,
the base and head times (us), the mean change and each process's change. GPU host only (torch,
Triton, nvcc).

Each workload is timed by the method it declares, as the runner times it. `cuda_events`: CUDA
events around one launch; a Triton launch spends tens of microseconds in Python before its
kernel is queued, and the flush before each sample (a 1 GiB memset, ~0.3 ms on an H200) keeps
the GPU busy meanwhile, so the events bracket the kernel, not the launch's Python. `cupti`: the
kernel's own span from CUPTI's activity records (read here, not by the runner's timers). Events
also bracket ~2.5 us of the GPU's own work between them and the kernel: timed by events, the
example's 9 us softmax read +58% where its kernel alone took +73% longer (the same +6.7 us).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.history_truth import (  # noqa: E402
    Kernels,
    alternated,
    in_processes,
    mean_over_processes,
)

PROCESSES = 3
ROUNDS = 6
SAMPLES = 8
WARMUP = 3
FLUSH_BYTES = 1 << 30
SHIFT = 0.25
# The workloads the example suite times with CUPTI, and the kernels their launches run.
CUPTI_KERNELS = {"softmax": ("softmax_kernel",)}


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton reads a kernel's source through its module
    spec.loader.exec_module(module)
    return module


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def build_operator(tree: Path) -> Any:
    """The tree's CUDA operator, built by load_inline under a name of its source's digest (one
    build per distinct source, shared by every process and pair)."""
    from torch.utils.cpp_extension import load_inline

    kernels = tree / "torch_kernels"
    source = (kernels / "scale_rows.cu").read_text()
    declaration = _module(kernels / "workloads.py", f"kw_truth_decl_{_digest(source)}").DECLARATION
    return load_inline(name=f"kw_truth_scale_rows_{_digest(source)}", cpp_sources=declaration,
                       cuda_sources=source, functions=["scale_rows"], verbose=False)  # fmt: skip


def launcher(tree: Path, wid: str, seed: int) -> Callable[[], None]:
    """One launch of workload `wid` as the tree's code runs it, on inputs of `seed`."""
    import torch

    name, _, params = wid.partition("[")
    p = {k: int(v) for k, v in (kv.split("=") for kv in params.rstrip("]").split(","))}
    g = torch.Generator().manual_seed(seed)
    if name == "scale_rows":
        ops = build_operator(tree)
        x = torch.randn(p["rows"], p["cols"], generator=g).cuda()
        scale = (torch.rand(p["rows"], generator=g) + 0.5).cuda()
        out = torch.empty_like(x)
        return lambda: ops.scale_rows(x, scale, SHIFT, out)
    if name == "softmax":
        source = tree / "torch_kernels" / "softmax_triton.py"
        module = _module(source, f"kw_truth_softmax_{_digest(source.read_text())}")
        x = (torch.randn(p["rows"], p["cols"], generator=g) * 4).cuda()
        out = torch.empty_like(x)
        module.softmax(x, out)  # compiles and autotunes before anything is timed
        return lambda: module.softmax(x, out)
    raise SystemExit(f"the truth knows no workload {wid!r}")


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    kernels: Kernels | None = None
    out: dict[str, Any] = {}
    for pair, p in spec["pairs"].items():
        out[pair] = {}
        for wid in p["workloads"]:
            launch = {side: launcher(Path(p[side]), wid, 1) for side in ("base", "head")}
            names = CUPTI_KERNELS.get(wid.partition("[")[0])
            if names:
                kernels = kernels or Kernels()  # CUPTI takes one subscriber a process
                kernels.names = names
            timer = kernels if names else None

            def sample(side: str, launch: dict[str, Callable[[], None]] = launch,
                       timer: Kernels | None = timer) -> float:  # fmt: skip
                if timer is not None:
                    return timer.time_us(launch[side], flush.zero_, torch.cuda.synchronize)
                flush.zero_()
                start.record()
                launch[side]()
                end.record()
                end.synchronize()
                return start.elapsed_time(end) * 1e3

            out[pair][wid] = alternated(sample, WARMUP, ROUNDS, SAMPLES)
    return out


def prebuild(spec: dict[str, Any]) -> None:
    """Every distinct operator source built at once, each in a process of its own (nvcc on a
    torch extension takes the better part of a minute; the builds share nothing)."""
    trees = {
        (Path(p[side]) / "torch_kernels" / "scale_rows.cu").read_text(): p[side]
        for p in spec["pairs"].values()
        for side in ("base", "head")
        if any(w.startswith("scale_rows[") for w in p["workloads"])
    }
    cmd = [sys.executable, "-m", "benchmarks.torch_truth", "--build"]
    with ThreadPoolExecutor(max(len(trees), 1)) as pool:
        done = list(pool.map(lambda t: subprocess.run([*cmd, t], cwd=ROOT, capture_output=True,
                                                      text=True), trees.values()))  # fmt: skip
    for d in done:
        if d.returncode != 0:
            raise SystemExit(f"the truth's operator build failed: {d.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[0] == "--build":
        build_operator(Path(args[1]))
        return 0
    spec_path, out = Path(args[0]), Path(args[1])
    spec = json.loads(spec_path.read_text())
    if len(args) > 2 and args[2] == "--one":
        out.write_text(json.dumps(measure(spec)))
        return 0
    started = time.monotonic()
    prebuild(spec)
    runs = in_processes("benchmarks.torch_truth", [str(spec_path)], out, PROCESSES)
    result = {pair: mean_over_processes([r[pair] for r in runs]) for pair in runs[0]}
    out.write_text(json.dumps({"seconds": time.monotonic() - started, "pairs": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

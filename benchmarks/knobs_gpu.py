"""A PyTorch/Triton suite's history on a real GPU with the knobs its authors turn (issue 47,
item 4): what kernelwatch reports of each beside the truth, and what each commit cost.

    # on the GPU host (torch, Triton, ncu, cupti-python; the service's wheels on PYTHONPATH):
    python -m benchmarks.knobs_gpu --out DIR [--budget 540] [--work W]
    # in a further device call, where the one before ran out of its budget (W kept between):
    python -m benchmarks.knobs_gpu --out DIR --resume --work W [--budget 540]
    # anywhere, again from what a run saved:
    python -m benchmarks.knobs_gpu --table DIR/knobs.json
    # the runner's seconds by kind of commit (benchmarks/runner_cost on this suite, COST_KINDS):
    python -m benchmarks.knobs_gpu --cost [DIR]

A git repository of benchmarks/knobs_suite (a Triton `tl.dot` matmul, a Triton row norm, a
torch.compile'd block, torch's softmax) gets a history in which each knob is turned once, an
A/A commit after each: `num_stages` 3 -> 1 in the matmul; a README commit and a ~4% change of
the row norm (4% of its rows normalised twice) pushed together, which the service bisects; a
graph break in the block; a compile-time cost with no runtime one (a Python loop Dynamo traces
in every process); a peak-memory cost with no runtime one (a scratch tensor per softmax); and
the fix of them all. Each push goes through the signed webhook of a real `kernelwatch serve`
(SQLite) to a real `kernelwatch-runner agent` (benchmarks/history_gpu.record_history).

The truth of a commit that changed a knob comes from this file's own instrument (`--truth-one`):
both versions of the changed module loaded in one process under names of their own; a duration
timed interleaved A B / B A with the L2 flushed, in fresh processes; a compile time as
torch.compile and a first call after a `torch._dynamo.reset()`, sides alternated; a peak memory
as the allocator's peak over one launch less what it held before. A commit that changed no knob
has the truth 0 by construction (the same code).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import device_history  # noqa: E402
from benchmarks.history_gpu import (  # noqa: E402
    git,
    reported_by_series,
)
from benchmarks.history_truth import (  # noqa: E402
    EventTimer,
    alternated,
    central,
    in_processes,
)

SUITE = ROOT / "benchmarks" / "knobs_suite"
REPOSITORY = "bench/knobs"
KERNELS = "knobs_kernels"
SERIES = {  # workload id -> the module whose knob moves it
    "tmatmul[k=4096,m=4096,n=4096]": "matmul_triton.py",
    "rownorm[cols=4096,rows=16384]": "rownorm_triton.py",
    "block[cols=8192,rows=8192]": "block.py",
    "softmax[cols=4096,rows=8192]": "softmax.py",
}
# The knobs: (module, text, the text a step puts in its place, what the truth measures).
KNOBS = {
    "num_stages": ("matmul_triton.py", "NUM_STAGES = 3", "NUM_STAGES = 1", "duration"),
    "redo": ("rownorm_triton.py", "REDO_PERCENT = 0", "REDO_PERCENT = 4", "duration"),
    "graph break": ("block.py", "GRAPH_BREAK = False", "GRAPH_BREAK = True", "duration"),
    "trace": ("block.py", "TRACE_STEPS = 0", "TRACE_STEPS = 50000", "compile"),
    "workspace": ("softmax.py", "WORKSPACE = False", "WORKSPACE = True", "memory"),
}
# (kind, knob or None, pushed together with the next commit)
HISTORY = [
    ("base", None, False), ("step", "num_stages", False), ("aa", None, False),
    ("innocent", None, True), ("step", "redo", False), ("aa", None, False),
    ("step", "graph break", False), ("aa", None, False), ("step", "trace", False),
    ("aa", None, False), ("step", "workspace", False), ("aa", None, False), ("fix", None, False),
]  # fmt: skip
TRUTH_PROCESSES, ROUNDS, SAMPLES, WARMUP, COMPILES = 3, 6, 8, 3, 3
# What a commit costs the runner by what it changed (issue 47, item 4), one commit of each after
# the host's first: (kind, runner_cost's --change). The block's constant is folded into the
# kernel Inductor generates; the parameter gives softmax another id.
COST_KINDS = [
    ("a comment only", "knobs_kernels/matmul_triton.py"),
    ("one Triton kernel", "knobs_kernels/matmul_triton.py:NUM_WARPS = 8=>NUM_WARPS = 4"),
    ("the compiled block", "knobs_kernels/block.py:half = 0.5=>half = 0.25"),
    ("a workload parameter",
     'knobs_kernels/workloads.py:{"rows": 8192, "cols": 4096}=>{"rows": 8192, "cols": 2048}'),
]  # fmt: skip


def make_repository(repo: Path) -> list[dict[str, Any]]:
    """The suite committed once per entry of HISTORY; each commit as index, sha, kind, knob and
    whether it is pushed with the next."""
    shutil.copytree(SUITE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    kernels = repo / KERNELS
    originals = {p.name: p.read_text() for p in kernels.glob("*.py")}
    commits = []
    for i, (kind, knob, with_next) in enumerate(HISTORY):
        if knob:
            module, old, new, _ = KNOBS[knob]
            text = (kernels / module).read_text()
            assert old in text, (module, old)
            (kernels / module).write_text(text.replace(old, new))
        elif kind == "fix":
            for name, text in originals.items():
                (kernels / name).write_text(text)
        else:
            with (repo / "README.md").open("a") as f:
                f.write(f"Commit {i}: notes that change no kernel.\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{kind}: commit {i} ({knob or kind})")
        commits.append({"index": i, "sha": git(repo, "rev-parse", "HEAD"), "kind": kind,
                        "knob": knob, "with_next": with_next})  # fmt: skip
    return commits


def _module(tree: Path, name: str, as_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(as_name, tree / KERNELS / name)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[as_name] = module  # Triton reads a kernel's source through its module
    spec.loader.exec_module(module)
    return module


def _launcher(module: Any, name: str, torch: Any) -> Any:
    """One launch of the workload module `name` holds, on inputs drawn as its workload does."""
    g = torch.Generator().manual_seed(1)
    if name == "matmul_triton.py":
        a = torch.randn(4096, 4096, generator=g).half().cuda()
        b = torch.randn(4096, 4096, generator=g).half().cuda()
        c = torch.empty(4096, 4096, dtype=torch.float16, device="cuda")
        return lambda: module.matmul(a, b, c)
    if name == "rownorm_triton.py":
        x = torch.randn(16384, 4096, generator=g).cuda()
        y = torch.empty_like(x)
        return lambda: module.rownorm(x, y)
    if name == "block.py":
        x, r = (torch.randn(8192, 8192, generator=g).cuda() for _ in range(2))
        gain = (torch.rand(8192, generator=g) + 0.5).cuda()
        compiled = torch.compile(module.block)
        return lambda: compiled(x, r, gain)
    x = torch.randn(8192, 4096, generator=g).cuda()
    return lambda: module.softmax(x)


def truth_one(spec: dict[str, Any]) -> dict[str, Any]:
    """In this process, per pair: both sides' module loaded; the duration interleaved with the
    L2 flushed, and what the pair's knob moves besides (compile seconds, peak bytes)."""
    import torch

    timer = EventTimer(torch)
    out: dict[str, Any] = {}
    for pair, p in spec["pairs"].items():
        name, what = p["module"], p["measures"]
        modules = {side: _module(Path(p[side]), name, f"kw_knobs_{pair}_{side}")
                   for side in ("base", "head")}  # fmt: skip
        launch = {side: _launcher(modules[side], name, torch) for side in modules}
        for side in launch:
            launch[side]()  # compiles before anything is timed

        def sample(side: str, launch: dict[str, Any] = launch) -> float:
            return timer(launch[side])

        found: dict[str, Any] = {"duration": alternated(sample, WARMUP, ROUNDS, SAMPLES)}
        if what == "compile":
            found["compile_s"] = compile_seconds(modules, torch)
        if what == "memory":
            found["peak_bytes"] = {side: peak_bytes(launch[side], torch) for side in launch}
        out[pair] = found
    return out


def compile_seconds(modules: dict[str, Any], torch: Any) -> dict[str, float]:
    """torch.compile and a first call of each side's block, from a reset Dynamo, sides
    alternated COMPILES times (the caches warm, as the runner's are): the central seconds."""
    g = torch.Generator().manual_seed(2)
    x, r = (torch.randn(8192, 8192, generator=g).cuda() for _ in range(2))
    gain = (torch.rand(8192, generator=g) + 0.5).cuda()
    taken: dict[str, list[float]] = {"base": [], "head": []}
    for r_ in range(COMPILES):
        for side in ("base", "head") if r_ % 2 == 0 else ("head", "base"):
            torch._dynamo.reset()
            started = time.perf_counter()
            torch.compile(modules[side].block)(x, r, gain)
            torch.cuda.synchronize()
            taken[side].append(time.perf_counter() - started)
    return {side: central(v) for side, v in taken.items()}


def peak_bytes(launch: Any, torch: Any) -> float:
    """What the allocator held at most during one launch beyond what it held before it."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    launch()
    torch.cuda.synchronize()
    return float(torch.cuda.max_memory_allocated() - before)


def measure_truth(work: Path, commits: list[dict[str, Any]]) -> dict[str, Any]:
    """Per commit that turned a knob (or the fix, per module it restored): its parent's and its
    own module, measured by `--truth-one` in TRUTH_PROCESSES fresh processes."""
    repo, pairs = work / "repo", {}
    for parent, commit in itertools.pairwise(commits):
        changed = git(repo, "diff", "--name-only", parent["sha"], commit["sha"]).split()
        for path in changed:
            name = Path(path).name
            if not path.startswith(f"{KERNELS}/") or name not in SERIES.values():
                continue
            knob = KNOBS.get(commit["knob"] or "")
            measures = knob[3] if knob and knob[0] == name else "duration"
            trees = {}
            for side, c in (("base", parent), ("head", commit)):
                trees[side] = str(work / "trees" / c["sha"][:12])
                if not Path(trees[side]).exists():
                    git(repo, "worktree", "add", "-q", "--detach", trees[side], c["sha"])
            pairs[f"{commit['index']}:{name}"] = {**trees, "module": name, "measures": measures}
    spec, out = work / "truth-spec.json", work / "truth.json"
    spec.write_text(json.dumps({"pairs": pairs}))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "truth-inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(work / "truth-triton"))
    runs = in_processes("benchmarks.knobs_gpu", ["--truth-one", str(spec)], out, TRUTH_PROCESSES)
    return combine(runs)


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per commit index and series: the mean change over the processes, each process's, and
    the compile seconds and peak bytes where the pair measured them."""
    series_of = {module: wid for wid, module in SERIES.items()}
    truth: dict[str, Any] = {}
    for pair in runs[0]:
        index, module = pair.split(":")
        changes = [r[pair]["duration"]["change"] for r in runs]
        entry: dict[str, Any] = {
            "change": sum(changes) / len(changes), "process_changes": changes,
            "base_us": sum(r[pair]["duration"]["base_us"] for r in runs) / len(runs),
            "head_us": sum(r[pair]["duration"]["head_us"] for r in runs) / len(runs),
        }  # fmt: skip
        for key in ("compile_s", "peak_bytes"):
            if key in runs[0][pair]:
                entry[key] = {side: sum(r[pair][key][side] for r in runs) / len(runs)
                              for side in ("base", "head")}  # fmt: skip
        truth.setdefault(index, {})[series_of[module]] = entry
    return truth


def summarize(saved: dict[str, Any]) -> dict[str, Any]:
    """The table's rows (per commit and series: the truth, what was reported, the verdict, the
    measures that moved, the alert's summary) and each alert's bisection."""
    truth = saved.get("truth") or {}
    index = {c["sha"]: c["index"] for c in saved["commits"]}
    alerts: dict[tuple[int | None, str], list[dict[str, Any]]] = {}
    for a in saved["alerts"]:
        key = (index.get(a["commit"]), a["series"]["workload"])
        alerts.setdefault(key, []).append(a)
    rows = []
    for commit in saved["commits"]:
        metrics = saved["reported"].get(commit["sha"])
        if metrics is None:
            continue
        reported = reported_by_series(metrics)
        moved = {f"{w['workload']}": [m["said"] for m in w.get("measures", [])
                                      if m.get("verdict") not in ("unchanged", None)]
                 for w in metrics["workloads"]}  # fmt: skip
        for wid in SERIES:
            m, true = reported.get(wid, {}), truth.get(str(commit["index"]), {}).get(wid)
            name = wid.partition("[")[0]
            rows.append({
                "commit": commit["index"], "kind": commit["kind"], "knob": commit["knob"],
                "series": wid, "truth": true["change"] if true else 0.0,
                "truth_compile_s": (true or {}).get("compile_s"),
                "truth_peak_bytes": (true or {}).get("peak_bytes"),
                "reported": m.get("change"), "verdict": m.get("verdict"),
                "measures": moved.get(name, []),
                "alerts": [a.get("summary", "") for a in alerts.get((commit["index"], name), [])],
            })  # fmt: skip
    bisected = [{"alert": a["id"], "commit": index.get(a["commit"]),
                 "first_bad": index.get(a.get("first_bad_commit") or "")}
                for a in saved["alerts"] if a.get("bisect")]  # fmt: skip
    return {"rows": rows, "bisected": bisected, "seconds": saved.get("seconds", {})}


def render(summary: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:+.1%}"

    lines = ["| commit | series | truth | reported | verdict | measures moved | alert |",
             "|---|---|--:|--:|---|---|---|"]  # fmt: skip
    for r in summary["rows"]:
        truth = pct(r["truth"])
        if r["truth_compile_s"]:
            truth += f", compile {r['truth_compile_s']['base']:.2f} → " \
                     f"{r['truth_compile_s']['head']:.2f} s"  # fmt: skip
        if r["truth_peak_bytes"]:
            truth += f", peak {r['truth_peak_bytes']['base'] / 1e6:.0f} → " \
                     f"{r['truth_peak_bytes']['head'] / 1e6:.0f} MB over the inputs"  # fmt: skip
        lines.append(f"| {r['commit']} {r['knob'] or r['kind']} | {r['series']} | {truth} | "
                     f"{pct(r['reported'])} | {r['verdict'] or '-'} | "
                     f"{'; '.join(r['measures'])} | {' / '.join(r['alerts'])[:200]} |")  # fmt: skip
    for b in summary["bisected"]:
        lines.append(f"alert {b['alert']} at commit {b['commit']}: bisected to commit "
                     f"{b['first_bad'] if b['first_bad'] is not None else '-'}")  # fmt: skip
    for sha, seconds in summary["seconds"].items():
        lines.append(f"commit {sha}: settled {seconds:.0f} s after its push")
    return "\n".join(lines)


def cost(out: str | None) -> int:
    """benchmarks.runner_cost on this suite: its first commit, then one commit of each of
    COST_KINDS; its tables (seconds per stage and run against 60 s, stability) and exit code."""
    from benchmarks import runner_cost

    for run, (kind, spec) in enumerate(COST_KINDS, start=2):
        print(f"run {run}: {kind} ({spec})", flush=True)
    argv = ["--suite", str(SUITE), "--runs", str(len(COST_KINDS) + 1), "--slowest", "0"]
    argv += [arg for _, spec in COST_KINDS for arg in ("--change", spec)]
    return runner_cost.main(argv + (["--out", out] if out else []))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--cost"]:
        return cost(argv[1] if len(argv) > 1 else None)
    here = device_history.script(sys.modules[__name__], "knobs.json", Path("/tmp/kw-knobs"))
    return device_history.main(here, argv)


if __name__ == "__main__":
    sys.exit(main())

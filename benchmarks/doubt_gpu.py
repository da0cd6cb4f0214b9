"""Doubt settled in a minute, on a real GPU (issue 52): a graph break right after the first
commit, and a launch whose runs sit on two levels, through the real chain, the truth beside.

    # on the GPU host (torch, Triton, ncu, cupti-python; the service's wheels on PYTHONPATH):
    python -m benchmarks.doubt_gpu --out DIR [--budget 540] [--work W]
    # in a second call of the device, where the first ran out of its budget (W kept between):
    python -m benchmarks.doubt_gpu --out DIR --resume --work W [--budget 540]
    # anywhere, again from what a run saved:
    python -m benchmarks.doubt_gpu --table DIR/doubt.json

A git repository of benchmarks/doubt_suite (a torch.compile'd block, a launch whose every
process lands on one of two levels 3% apart, two steady launches) gets a history: the suite,
a graph break in the compiled block (its fused kernel split in two), two innocent commits (the
README), and the fix. Each commit goes through the signed webhook of a real `kernelwatch serve`
(SQLite) to a real `kernelwatch-runner agent`, one push at a time, no push waiting for another
to settle anything (benchmarks/history_gpu.record_history). The truth of a commit that changed
the block comes from an instrument of this file's own (`--truth-one`): both versions of the
block compiled in one process, timed interleaved A B / B A, L2 flushed, in fresh processes; a
commit that changed no source has the truth 0 by construction (the same code).

The table prints, per commit and series, the truth, what kernelwatch reported and its verdict
once everything settled; below it, per alert, how long after its commit's push (its run job
queued) it opened, confirmed, and by what; and how many verdicts on the two-level series were
not `unchanged`.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.history_gpu import (  # noqa: E402
    _load,
    git,
    log,
    record_history,
    reported_by_series,
)
from benchmarks.history_truth import alternated, in_processes, mean_over_processes  # noqa: E402

SUITE = ROOT / "benchmarks" / "doubt_suite"
REPOSITORY = "bench/doubt"
BLOCK = "doubt_kernels/block.py"
HISTORY = [("base", None), ("step", "graph break"), ("innocent", None), ("innocent", None),
           ("fix", "no graph break")]  # fmt: skip
SERIES = ["block[cols=8192,rows=8192]", "bimodal[cols=8192,rows=8192]",
          "copy[cols=8192,rows=8192]", "scale[cols=8192,rows=8192]"]  # fmt: skip
TWO_LEVELS = "bimodal[cols=8192,rows=8192]"
TRUTH_PROCESSES, ROUNDS, SAMPLES, WARMUP = 3, 6, 8, 3


def make_repository(repo: Path) -> list[dict[str, Any]]:
    shutil.copytree(SUITE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for i, (kind, what) in enumerate(HISTORY):
        block = repo / BLOCK
        if kind in ("step", "fix"):
            old, new = ("False", "True") if kind == "step" else ("True", "False")
            text = block.read_text()
            assert f"GRAPH_BREAK = {old}" in text
            block.write_text(text.replace(f"GRAPH_BREAK = {old}", f"GRAPH_BREAK = {new}"))
        else:
            with (repo / "README.md").open("a") as f:
                f.write(f"Commit {i}: notes that change no kernel.\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{kind}: commit {i} ({what or kind})")
        commits.append({"index": i, "sha": git(repo, "rev-parse", "HEAD"), "kind": kind,
                        "what": what})  # fmt: skip
    return commits


def _block_of(tree: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, tree / BLOCK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def truth_one(spec: dict[str, Any]) -> dict[str, Any]:
    """In this process: each pair's two blocks compiled and timed interleaved, L2 flushed."""
    import torch

    flush = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8192, 8192, generator=g).cuda()
    r = torch.randn(8192, 8192, generator=g).cuda()
    gain = (torch.rand(8192, generator=g) + 0.5).cuda()
    out: dict[str, Any] = {}
    for pair, p in spec["pairs"].items():
        compiled = {side: torch.compile(_block_of(Path(p[side]), f"kw_truth_{pair}_{side}").block)
                    for side in ("base", "head")}  # fmt: skip

        def sample(side: str, compiled: dict[str, Any] = compiled) -> float:
            flush.zero_()
            start.record()
            compiled[side](x, r, gain)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e3

        out[pair] = {SERIES[0]: alternated(sample, WARMUP, ROUNDS, SAMPLES)}
    return out


def measure_truth(work: Path, commits: list[dict[str, Any]]) -> dict[str, Any]:
    """Per commit that changed the block's source: the block against its parent's."""
    repo, pairs = work / "repo", {}
    for parent, commit in itertools.pairwise(commits):
        if BLOCK not in git(repo, "diff", "--name-only", parent["sha"], commit["sha"]).split():
            continue
        trees = {}
        for side, c in (("base", parent), ("head", commit)):
            trees[side] = str(work / "trees" / c["sha"][:12])
            if not Path(trees[side]).exists():
                git(repo, "worktree", "add", "-q", "--detach", trees[side], c["sha"])
        pairs[str(commit["index"])] = trees
    spec, out = work / "truth-spec.json", work / "truth.json"
    spec.write_text(json.dumps({"pairs": pairs}))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "truth-inductor"))
    runs = in_processes("benchmarks.doubt_gpu", ["--truth-one", str(spec)], out, TRUTH_PROCESSES)
    return {pair: mean_over_processes([r[pair] for r in runs]) for pair in runs[0]}


def _at(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def summarize(saved: dict[str, Any]) -> dict[str, Any]:
    """The table's rows, and per alert how long after its commit's push it opened."""
    index = {c["sha"]: c for c in saved["commits"]}
    truth = saved.get("truth") or {}
    rows = []
    for commit in saved["commits"]:
        metrics = saved["reported"].get(commit["sha"])
        if metrics is None:
            break
        reported = reported_by_series(metrics)
        for wid in SERIES:
            m = reported.get(wid, {})
            true = truth.get(str(commit["index"]), {}).get(wid)
            rows.append({
                "commit": commit["index"], "kind": commit["kind"], "series": wid,
                "truth": true["change"] if true else 0.0,
                "truth_processes": true["process_changes"] if true else None,
                "reported": m.get("change"), "verdict": m.get("verdict"),
                "note": ((m.get("analysis") or {}).get("note") or "")[:160],
            })  # fmt: skip
    queued = {}
    for job in saved["jobs"]:
        if job["kind"] == "run":
            queued[job["commit"]] = min(queued.get(job["commit"], 1e18), _at(job["created_at"]))
    alerts = []
    for a in saved["alerts"]:
        opened = [e for e in a.get("events", []) if e["to_state"] in ("open", "dismissed")]
        pushed = queued.get(a["commit"])
        settled_at = _at(opened[0]["at"]) if opened else None
        alerts.append({
            "id": a["id"], "commit": index.get(a["commit"], {}).get("index"),
            "series": a["series"]["workload"], "state": a["state"],
            "seconds_after_push": settled_at - pushed if settled_at and pushed else None,
            "by": opened[0]["actor"] if opened else None,
            "note": opened[0]["note"] if opened else "", "summary": a.get("summary", ""),
        })  # fmt: skip
    false_two_level = [r for r in rows if r["series"] == TWO_LEVELS
                       and r["verdict"] not in ("unchanged", "new", None)]  # fmt: skip
    return {"rows": rows, "alerts": alerts, "false_two_level": false_two_level}


def render(summary: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:+.1%}"

    lines = ["| commit | series | truth | reported | verdict | note |", "|---|---|--:|--:|---|---|"]
    for r in summary["rows"]:
        lines.append(
            f"| {r['commit']} {r['kind']} | {r['series']} | {pct(r['truth'])} | "
            f"{pct(r['reported'])} | {r['verdict'] or '-'} | {r['note'][:90]} |"
        )
    for a in summary["alerts"]:
        after = a["seconds_after_push"]
        lines.append(f"alert {a['id']} ({a['series']} at commit {a['commit']}): {a['state']}, "
                     f"{'-' if after is None else f'{after:.0f} s'} after its push, by "
                     f"{a['by']}: {a['note']}")  # fmt: skip
    lines.append(f"verdicts on the two-level series other than unchanged: "
                 f"{len(summary['false_two_level'])}")  # fmt: skip
    return "\n".join(lines)


PROGRESS = "progress.json"  # in --work: the commits, the truth, what each settled commit said


def record(work: Path, out: Path, budget: float, resume: bool) -> dict[str, Any] | None:
    """The history (or, with `resume`, its commits an earlier call did not reach, from `work`
    as that call left it: its repository, truth, service database and runner cache); None
    where there is nothing to resume."""
    deadline = time.monotonic() + budget
    if resume:
        if not (work / PROGRESS).exists():
            return None
        saved = json.loads((work / PROGRESS).read_text())
        earlier = saved.get("at_push", {})
        left = [c for c in saved["commits"] if c["sha"] not in earlier]
        log(f"resuming at commit {left[0]['index'] if left else '-'}: "
            f"{len(earlier)} of {len(saved['commits'])} settled before")  # fmt: skip
    else:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        commits = make_repository(work / "repo")
        started = time.monotonic()
        truth = measure_truth(work, commits)
        log(f"truth measured in {time.monotonic() - started:.0f} s")
        saved, earlier, left = {"commits": commits, "truth": truth}, {}, commits
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    try:
        saved |= record_history(work, left, deadline, REPOSITORY, ncu_reuse=True,
                                earlier=earlier)  # fmt: skip
    finally:  # what the agent and the service said, also of a history that broke off
        for name in ("agent.log", "service.log", "kernelwatch.db"):
            if (work / name).exists():
                shutil.copy(work / name, out / name)
    saved["history_seconds"] = saved.get("history_seconds", 0.0) + time.monotonic() - started
    (work / PROGRESS).write_text(json.dumps(saved, indent=1))
    (out / "doubt.json").write_text(json.dumps(saved, indent=1))
    return saved


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--truth-one"]:  # one process of the truth: SPEC PART --one
        spec, part = Path(argv[1]), Path(argv[2])
        part.write_text(json.dumps(truth_one(json.loads(spec.read_text()))))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=Path, help="record on this GPU host; results go here")
    what.add_argument("--table", type=Path, help="print the table of a saved doubt.json")
    p.add_argument("--budget", type=float, default=540.0, help="wall seconds for it all")
    p.add_argument("--work", type=Path, default=Path("/tmp/kw-doubt"))
    p.add_argument("--resume", action="store_true",
                   help="go on with the history an earlier --out left in --work")  # fmt: skip
    args = p.parse_args(argv)
    if args.resume and not args.out:
        p.error("--resume goes with --out")
    if args.table:
        saved = _load(args.table)
    else:
        saved = record(args.work.resolve(), args.out, args.budget, args.resume)
        if saved is None:
            print(f"doubt_gpu: nothing to resume in {args.work} ({PROGRESS} missing)",
                  file=sys.stderr)  # fmt: skip
            return 2
    summary = summarize(saved)
    (args.table.parent if args.table else args.out).joinpath("summary.json").write_text(
        json.dumps(summary, indent=1)
    )
    print(render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

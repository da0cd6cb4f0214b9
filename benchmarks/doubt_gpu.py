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
queued) it opened, confirmed, and by what; how many verdicts on the two-level series were not
`unchanged`; and how many alerts (of the duration or a measure beside it) opened at a commit
that changed no source.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import sys
from datetime import datetime
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
    in_processes,
    mean_over_processes,
)

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

    timer = EventTimer(torch)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8192, 8192, generator=g).cuda()
    r = torch.randn(8192, 8192, generator=g).cuda()
    gain = (torch.rand(8192, generator=g) + 0.5).cuda()
    out: dict[str, Any] = {}
    for pair, p in spec["pairs"].items():
        compiled = {side: torch.compile(_block_of(Path(p[side]), f"kw_truth_{pair}_{side}").block)
                    for side in ("base", "head")}  # fmt: skip

        def sample(side: str, compiled: dict[str, Any] = compiled) -> float:
            return timer(lambda: compiled[side](x, r, gain))

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
    # A commit that changed no source can regress nothing, a measure beside the duration neither.
    kinds = {c["index"]: c["kind"] for c in saved["commits"]}
    false_alerts = [a for a in alerts if kinds.get(a["commit"]) == "innocent"]
    return {"rows": rows, "alerts": alerts, "false_two_level": false_two_level,
            "false_alerts": false_alerts}  # fmt: skip


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
                     f"{'-' if after is None else f'{after:.1f} s'} after its push, by "
                     f"{a['by']}: {a['note']}")  # fmt: skip
    lines.append(f"verdicts on the two-level series other than unchanged: "
                 f"{len(summary['false_two_level'])}")  # fmt: skip
    lines.append(f"alerts at commits that changed no source: "
                 f"{len(summary.get('false_alerts', []))}")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    here = device_history.script(sys.modules[__name__], "doubt.json", Path("/tmp/kw-doubt"))
    return device_history.main(here, argv)


if __name__ == "__main__":
    sys.exit(main())

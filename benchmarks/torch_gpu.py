"""The PyTorch/Triton example suite along a real history on a real GPU (issue 32, item 6): what
kernelwatch reports beside the truth.

    # on the GPU host (torch, Triton, nvcc, ncu, cupti-python; the service's wheels on PYTHONPATH):
    python -m benchmarks.torch_gpu --out DIR [--budget 540]
    # ... with the truth an earlier run measured (the commits' code is the same every time):
    python -m benchmarks.torch_gpu --out DIR --truth EARLIER/truth.json
    # the truth alone (a device call of its own):
    python -m benchmarks.torch_gpu --truth-only T
    # anywhere, again from what a run saved (--db: as its database says, through a real service):
    python -m benchmarks.torch_gpu --table DIR/torch.json [--db DIR/kernelwatch.db]

A git repository of docs/example-suite-torch (a load_inline CUDA operator, an autotuned Triton
row softmax and a torch.compile'd MLP training step; the first two here, SELECTED) gets a
history: a base, an A/A commit, a forced worse autotune config for the Triton kernel (16 warps
per row), an innocent commit, an uncoalesced access pattern in the CUDA operator (each thread a
run of adjacent float4s instead of every blockDim-th), an innocent commit, and the fix of both.
Each commit goes through the signed webhook of a real `kernelwatch serve` (SQLite) to a real
`kernelwatch-runner agent`, one push at a time (benchmarks/history_gpu.record_history). The
truth of every commit that changed a kernel's source comes from benchmarks/torch_truth.py (its
builds and its parent's interleaved in one process, L2 flushed). The table prints, per commit
and series, the true change, the change kernelwatch reported, its verdict, and for an alert the
kernel and the cause it ranks first, and what the autotuner chose differently.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.history_gpu import (  # noqa: E402
    _load,
    _wait,
    free_port,
    git,
    log,
    record_history,
    reported_by_series,
    running,
    series_key,
)

EXAMPLE = ROOT / "docs" / "example-suite-torch"
REPOSITORY = "bench/torch"
SOFTMAX = "softmax_triton.py"
OPERATOR = "scale_rows.cu"
# The injected regressions: (file under torch_kernels/, text, its replacement).
INJECT = {
    "triton": (SOFTMAX, "for w in (2, 4, 8)]", "for w in (16,)]"),
    "operator": (
        OPERATOR,
        "    for (int j = threadIdx.x; j < cols4; j += blockDim.x) {\n",
        "    const int per = (cols4 + blockDim.x - 1) / blockDim.x;\n"
        "    for (int j0 = threadIdx.x * per, j = j0; j < cols4 && j < j0 + per; ++j) {\n",
    ),
}
HISTORY = [("base", None), ("aa", None), ("step", "triton"), ("innocent", None),
           ("step", "operator"), ("innocent", None), ("fix", None)]  # fmt: skip
# The operator's and the Triton kernel's workloads (smoke and bandwidth): the training step's
# torch.compile takes seconds in every timing process and placement, and a commit of the whole
# suite minutes (tests/runner/suite/test_example_suite_torch.py covers it on the GPU).
SELECTED = '["^scale_rows", "^softmax"]'
# Short launches in 3 timing processes, not 6, so that the history fits a device call of 10
# minutes (runner.run.timing_passes.short_processes).
SHORT_PROCESSES = "3"
SERIES = {  # workload id -> the file whose change changes it
    "scale_rows[cols=1024,rows=1024]": OPERATOR,
    "scale_rows[cols=8192,rows=8192]": OPERATOR,
    "softmax[cols=1024,rows=4096]": SOFTMAX,
}


def make_repository(repo: Path) -> list[dict[str, Any]]:
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    toml = repo / "kernelwatch.toml"
    toml.write_text(toml.read_text().replace('default = ["smoke"]', f"default = {SELECTED}"))
    git(repo, "init", "-q", "-b", "main")
    originals = {f: (repo / "torch_kernels" / f).read_text() for f in (SOFTMAX, OPERATOR)}
    commits = []
    for i, (kind, what) in enumerate(HISTORY):
        if what:
            name, old, new = INJECT[what]
            path = repo / "torch_kernels" / name
            assert old in path.read_text(), (name, old)
            path.write_text(path.read_text().replace(old, new))
        elif kind == "fix":
            for name, text in originals.items():
                (repo / "torch_kernels" / name).write_text(text)
        else:
            with (repo / "README.md").open("a") as f:
                f.write(f"Commit {i}: notes that change no kernel.\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{kind}: commit {i} ({what or kind})")
        commits.append({"index": i, "sha": git(repo, "rev-parse", "HEAD"), "kind": kind,
                        "what": what})  # fmt: skip
    return commits


def measure_truth(work: Path, commits: list[dict[str, Any]]) -> dict[str, Any]:
    """Per commit that changed a kernel's source: its workloads against its parent's."""
    repo = work / "repo"
    pairs = {}
    for parent, commit in itertools.pairwise(commits):
        changed = set(git(repo, "diff", "--name-only", parent["sha"], commit["sha"]).split())
        wids = [w for w, f in SERIES.items() if f and f"torch_kernels/{f}" in changed]
        if not wids:
            continue
        trees = {}
        for side, c in (("base", parent), ("head", commit)):
            trees[side] = str(work / "trees" / c["sha"][:12])
            if not Path(trees[side]).exists():
                git(repo, "worktree", "add", "-q", "--detach", trees[side], c["sha"])
        pairs[str(commit["index"])] = {**trees, "workloads": wids}
    spec, out = work / "truth-spec.json", work / "truth.json"
    spec.write_text(json.dumps({"pairs": pairs}))
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(work / "truth-extensions"),
           "TRITON_CACHE_DIR": str(work / "truth-triton")}  # fmt: skip
    subprocess.run([sys.executable, "-m", "benchmarks.torch_truth", str(spec), str(out)],
                   cwd=ROOT, check=True, env=env)  # fmt: skip
    return json.loads(out.read_text())


def reread(saved: dict[str, Any], database: Path, work: Path) -> dict[str, Any]:
    """What the recorded database says now of every commit and alert, through a real
    `kernelwatch serve` on a copy of it: also a commit whose judging the budget cut short."""
    work.mkdir(parents=True, exist_ok=True)
    copy = work / "kernelwatch.db"
    if database.suffix == ".gz":
        copy.write_bytes(gzip.decompress(database.read_bytes()))
    elif database != copy:
        shutil.copy(database, copy)
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": f"sqlite:///{copy}",
           "KERNELWATCH_ADMIN_TOKEN": "reread", "KERNELWATCH_DATA_DIR": str(work)}  # fmt: skip
    port = free_port()
    with (
        running([sys.executable, "-m", "service.cli", "serve", "--port", str(port)], env,
                work / "service.log"),
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                     headers={"Authorization": "Bearer reread"}) as client,
    ):  # fmt: skip
        _wait(lambda: client.get("/healthz").status_code == 200, 60)
        reported = {}
        for c in saved["commits"]:
            answer = client.get(f"/api/v1/commits/{c['sha']}/metrics")
            if answer.status_code == 200:
                reported[c["sha"]] = answer.json()
        alerts = [client.get(f"/api/v1/alerts/{a['id']}").json()
                  for a in client.get("/api/v1/alerts").json()]  # fmt: skip
    return {**saved, "reported": reported, "alerts": alerts}


def rows(saved: dict[str, Any]) -> list[dict[str, Any]]:
    alerts: dict[tuple[str, str], dict[str, Any]] = {}
    for a in saved["alerts"]:
        alerts[(a["commit"], series_key(a["series"]["workload"], a["series"]["params"]))] = a
    truth = saved.get("truth", {}).get("pairs", {})
    out = []
    for commit in saved["commits"]:
        metrics = saved["reported"].get(commit["sha"])
        if metrics is None:
            break
        reported = reported_by_series(metrics)
        for wid in SERIES:
            m = reported.get(wid, {})
            true = truth.get(str(commit["index"]), {}).get(wid)
            alert = alerts.get((commit["sha"], wid))
            top = ((alert or {}).get("attribution") or {}).get("causes") or [{}]
            out.append({
                "commit": commit["index"], "kind": commit["kind"], "what": commit["what"],
                "series": wid, "truth": true["change"] if true else None,
                "truth_spread": true["process_changes"] if true else None,
                "truth_us": true["head_us"] - true["base_us"] if true else None,
                "reported": m.get("change"), "verdict": m.get("verdict"),
                "reported_us": _delta_us(m),
                "alert": alert["state"] if alert else None,
                "kernel": top[0].get("kernel"), "cause": top[0].get("label"),
                "choices": ((alert or {}).get("attribution") or {}).get("choices") or [],
                "summary": (alert or {}).get("summary", ""),
            })  # fmt: skip
    return out


def _delta_us(metric: dict[str, Any]) -> float | None:
    """The reported change in microseconds: the median less the baseline it was judged against."""
    change, median = metric.get("change"), (metric.get("statistics") or {}).get("median")
    return None if change is None or median is None else median - median / (1 + change)


def render(table: list[dict[str, Any]]) -> str:
    """Changes as a fraction and in microseconds: the truth's CUDA events bracket a launch's
    fixed overhead (~2.5 us) beside the kernel, a CUPTI-timed series the kernel alone, so that a
    short kernel's fraction differs between them where its microseconds agree."""

    def pct(x: float | None, us: float | None) -> str:
        return "-" if x is None else f"{x:+.1%} ({us:+.2f} us)" if us is not None else f"{x:+.1%}"

    lines = ["| commit | series | truth | reported | verdict | alert: kernel, top cause |",
             "|---|---|--:|--:|---|---|"]  # fmt: skip
    for r in table:
        named = f"{r['alert']}: {r['kernel']}, {r['cause']}" if r["alert"] else ""
        for c in r["choices"]:
            named += f"; {c['name']} chose {c['head']} (was {c['base']})"
        truth, reported = pct(r["truth"], r["truth_us"]), pct(r["reported"], r["reported_us"])
        lines.append(f"| {r['commit']} {r['what'] or r['kind']} | {r['series']} | {truth} | "
                     f"{reported} | {r['verdict'] or '-'} | {named} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=Path, help="record on this GPU host; results go here")
    what.add_argument("--table", type=Path, help="print the table of a saved torch.json")
    what.add_argument(
        "--truth-only", type=Path, metavar="OUT", help="measure only the truth (OUT/truth.json)"
    )
    p.add_argument(
        "--budget", type=float, default=540.0, help="wall seconds for the truth and the history"
    )
    p.add_argument("--work", type=Path, default=Path("/tmp/kw-torch"))
    p.add_argument(
        "--db",
        type=Path,
        help="with --table: read the verdicts and alerts from this recorded kernelwatch.db",
    )
    p.add_argument(
        "--truth", type=Path, help="with --out: the truth.json of an earlier run (the same code)"
    )
    args = p.parse_args(argv)
    if args.truth_only:  # the commits' code is the same every time: --truth reads it later
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        started = time.monotonic()
        truth = measure_truth(args.work, make_repository(args.work / "repo"))
        args.truth_only.mkdir(parents=True, exist_ok=True)
        (args.truth_only / "truth.json").write_text(json.dumps(truth, indent=1))
        log(f"truth measured in {time.monotonic() - started:.0f} s")
        return 0
    if args.table:
        saved = _load(args.table)
        if args.db:
            saved = reread(saved, args.db, args.work / "reread")
    else:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        deadline = time.monotonic() + args.budget
        commits = make_repository(args.work / "repo")
        started = time.monotonic()
        truth = _load(args.truth) if args.truth else measure_truth(args.work, commits)
        saved = {"commits": commits, "truth": truth}
        log(f"truth {'read' if args.truth else 'measured'} in {time.monotonic() - started:.0f} s")
        os.environ["KERNELWATCH_SHORT_PROCESSES"] = SHORT_PROCESSES  # the agent's, and its runs'
        started = time.monotonic()
        saved |= record_history(args.work, commits, deadline, REPOSITORY, ncu_reuse=True)
        saved["history_seconds"] = time.monotonic() - started
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "torch.json").write_text(json.dumps(saved, indent=1))
        for name in ("agent.log", "service.log", "kernelwatch.db"):
            shutil.copy(args.work / name, args.out / name)
    table = rows(saved)
    (args.table.parent if args.table else args.out).joinpath("table.json").write_text(
        json.dumps(table, indent=1)
    )
    print(render(table))
    for r in table:
        if r["summary"]:
            print(f"  {r['commit']} {r['series']}: {r['summary']}")
    index = {c["sha"]: c["index"] for c in saved["commits"]}
    for a in saved["alerts"]:
        fixed = index.get(a.get("fixed_by_commit") or "", "-")
        print(
            f"  alert {a['id']} at commit {index.get(a['commit'], '?')}: {a['state']}, fixed by "
            f"{fixed}, bisect {a.get('first_bad_commit') or '-'}"
        )


if __name__ == "__main__":
    sys.exit(main())

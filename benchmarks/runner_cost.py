"""Cost and stability of the GPU runner on the default suite (issue 5, item 10), on a GPU host.

    python -m benchmarks.runner_cost [--runs 2] [--change PATH ...] [--only REGEX] [--out DIR]
        [--suite DIR] [--warm-up]
        [--repository-name OWNER/NAME] [--author "Name <email>"] [--message TEXT]
        [--runner-name NAME] [--verbose]
    python -m benchmarks.runner_cost --reread DIR [--change PATH ...]

Copies this working tree (or `--suite DIR`'s, e.g. docs/example-suite-torch, paths of `--change`
relative to it) into a temporary git repository (one commit), then runs
`runner.run.pipeline.execute` on that commit `--runs` times: build, correctness, timing in the
suite's processes (and the short launches in more, "timing N/M (short)": runner.run.timing_passes),
timeline and ncu, each run from a fresh build, all runs sharing one runner cache (clones, the ncu
sections of runner.profile.reuse). With `--change PATH:KERNEL` (repeatable), every run after the
first is of a new commit that changes one of those kernels in turn, as a commit that touches one
kernel does: a branch that is never taken, so that its code differs and it runs as fast (`--change
PATH` adds an unused kernel to the file instead; a .py or .md PATH gets a comment: a commit that
changes code no workload imports, or prose; `--change PATH:OLD=>NEW` replaces text, back and forth:
a workload's parameter, a header's line, a Triton knob, a compiled function's code; which kernels
it reached, the documents' ncu sections say); without it, every run is of the same commit.
`--warm-up` first runs the first commit once in a runner cache of its own, not counted: the host's
caches (CuPy's, the driver's) warm and the runner's empty, as on a host that has run anything
before. Prints, per run, the seconds of every stage (from the `Progress` hooks the pipeline calls)
against its budget (60 s; 90 s for the first run and for a header's line), and per workload its
median in the first and the last run that ran its kernels' same code (a changed kernel's workloads
are compared across the runs before its change, or after it; after a header's line, the workloads
whose kernels' determinants moved), their difference and PASS/FAIL against 1% for workloads of 50
us and more. `--out` keeps each run's result document (run-1.json, ...) and its stage clock
(clock-1.json: seconds per stage and per workload, the log). Exits 1 on a FAIL.
Needs only the runner's dependencies (NumPy, CuPy, the CUDA tools; cupti-python optional).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.run.pipeline import Progress, RunRequest, execute

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 60.0  # issue 16: a commit of the default suite in 60 s, ncu included
WIDE_BUDGET_S = 90.0  # issue 33: a host's first commit, and a header every kernel includes
STABLE_PCT = 1.0
STABLE_MIN_US = 50.0
SKIP = {".git", ".venv", ".whl", ".gl", "__pycache__", ".pytest_cache", ".ruff_cache",
        ".kernelwatch", "build", "artifacts", "node_modules"}  # fmt: skip


class StageClock(Progress):
    """Seconds per stage: a stage lasts until the next one starts (or the run returns)."""

    def __init__(self, verbose: bool = False) -> None:
        self.stages: list[list[Any]] = []
        self.verbose = verbose
        self.lines: list[str] = []
        self.workloads: list[tuple[str, str, float]] = []  # (stage, workload, seconds)
        self.mark = time.perf_counter()

    def stage(self, name: str, total: int | None = None) -> None:
        self.finish()
        self.stages.append([name, time.perf_counter(), None])
        self.mark = time.perf_counter()

    def advance(self, label: str, outcome: Any = None) -> None:
        now = time.perf_counter()
        if self.stages:
            self.workloads.append((self.stages[-1][0], label, now - self.mark))
        self.mark = now

    def log(self, line: str) -> None:
        self.lines.append(line)
        if self.verbose:
            print(line, flush=True)

    def finish(self) -> None:
        if self.stages and self.stages[-1][2] is None:
            self.stages[-1][2] = time.perf_counter()

    def seconds(self) -> dict[str, float]:
        return {name: end - start for name, start, end in self.stages}


def snapshot(src: Path, dst: Path, author: str, message: str) -> str:
    """dst: a git repository whose one commit holds src's files (git-tracked and untracked but
    not ignored where src is a repository, else everything but caches and environments)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src, capture_output=True
    )
    if listed.returncode == 0 and listed.stdout:
        for rel in filter(None, listed.stdout.decode().split("\0")):
            if (src / rel).is_file() and not SKIP & set(Path(rel).parts):
                (dst / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, dst / rel)
    else:
        shutil.copytree(src, dst, ignore=lambda _, names: [n for n in names if n in SKIP],
                        dirs_exist_ok=True)  # fmt: skip
    name, _, email = author.partition("<")
    env = {**os.environ, "GIT_AUTHOR_NAME": name.strip(), "GIT_COMMITTER_NAME": name.strip(),
           "GIT_AUTHOR_EMAIL": email.rstrip(">").strip(),
           "GIT_COMMITTER_EMAIL": email.rstrip(">").strip()}  # fmt: skip
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", *cmd], cwd=dst, env=env, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dst, capture_output=True, text=True)
    return sha.stdout.strip()


def change(repo: Path, spec: str, run: int, author: str) -> str:
    """A new commit on `repo`: `spec` PATH:KERNEL gives that kernel of that CUDA source one
    more branch, never taken (a block index no grid of the suite reaches); PATH alone gets
    one more, unused, kernel (which renumbers the file's symbols: runner.profile.cubin), or, for a
    Python file or a document, a comment at its end; PATH:OLD=>NEW replaces the first OLD with
    NEW (and NEW with OLD where OLD is gone: runs alternate between them), e.g. one workload's
    parameter or a line of a header several kernels include."""
    path, _, kernel = spec.partition(":")
    source = (repo / path).read_text()
    if "=>" in kernel:  # PATH:OLD=>NEW, back again the next time (a parameter, a header)
        old, new = kernel.split("=>", 1)
        if old in source:
            source = source.replace(old, new, 1)
        elif new in source:
            source = source.replace(new, old, 1)
        else:
            raise SystemExit(f"--change {spec}: neither {old!r} nor {new!r} is in {path}")
    elif Path(path).suffix in (".py", ".md"):  # a comment: no workload runs differently
        source += f"\n{'#' if path.endswith('.py') else '<!--'} runner_cost: run {run}" \
                  f"{'' if path.endswith('.py') else ' -->'}\n"  # fmt: skip
    elif kernel:
        found = re.search(rf"\b{re.escape(kernel)}\s*\([^{{]*\{{", source)
        if not found:
            raise SystemExit(f"--change {spec}: no kernel {kernel!r} in {path}")
        never = f'\n    if (blockIdx.x == 0x7FFFFFF{run % 10}u) asm volatile("trap;");'
        source = source[: found.end()] + never + source[found.end() :]
    else:
        body = f"kernelwatch_cost_{run}(float* x) {{ x[0] = {run}; }}"
        source += f'\nextern "C" __global__ void {body}\n'
    (repo / path).write_text(source)
    name, _, email = author.partition("<")
    env = {**os.environ, "GIT_AUTHOR_NAME": name.strip(), "GIT_COMMITTER_NAME": name.strip(),
           "GIT_AUTHOR_EMAIL": email.rstrip(">").strip(),
           "GIT_COMMITTER_EMAIL": email.rstrip(">").strip()}  # fmt: skip
    for cmd in (["add", "-A"], ["commit", "-q", "-m", f"runner_cost: run {run} changes {path}"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    return sha.stdout.strip()


def key(w: dict[str, Any]) -> str:
    return f"{w['name']}[{','.join(f'{k}={v}' for k, v in sorted(w['params'].items()))}]"


def budgets(changes: list[str], runs: int) -> list[float]:
    """Each run's budget: WIDE_BUDGET_S for the first (nothing built, no section kept) and for
    a change that may reach every kernel (a header's line), BUDGET_S for the others."""
    wide = [run == 0 or ANY_KERNEL in c for run, c in enumerate(changed_kernels(changes, runs))]
    return [WIDE_BUDGET_S if w else BUDGET_S for w in wide]


def stage_table(
    clocks: list[StageClock],
    totals: list[float],
    docs: list[dict[str, Any]] | None = None,
    limits: list[float] | None = None,
) -> list[str]:
    names = list(dict.fromkeys(n for c in clocks for n in c.seconds()))
    head = "| stage | " + " | ".join(f"run {i + 1} s" for i in range(len(clocks))) + " |"
    rows = [head, "|---" * (len(clocks) + 1) + "|"]
    for name in names:
        cells = [f"{c.seconds().get(name, 0.0):.1f}" for c in clocks]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    limits = limits or [BUDGET_S] * len(totals)
    pairs = zip(totals, limits, strict=True)
    verdicts = [f"{t:.1f} / {b:g} {'PASS' if t <= b else 'FAIL'}" for t, b in pairs]
    rows.append("| total / budget (s) | " + " | ".join(verdicts) + " |")
    if docs:
        cells = [" / ".join(str(n) for n in profiled(doc)) for doc in docs]
        rows.append("| workloads profiled whole / in part / reused | " + " | ".join(cells) + " |")
    return rows


def profiled(doc: dict[str, Any]) -> tuple[int, int, int]:
    """How many of a run's workloads ncu profiled whole, profiled only in their changed
    kernels, and took whole from an earlier commit (runner.profile.reuse's reasons say which)."""
    reasons = [str(w["ncu"].get("reason", "")) for w in doc["workloads"] if w.get("ncu")]
    reused = sum(r.startswith("reused:") for r in reasons)
    part = sum(r.startswith("profiled at this commit:") for r in reasons)
    return len(reasons) - reused - part, part, reused


def workload_id(w: dict[str, Any]) -> str:
    """The suite's id of a document's workload (kernels.workload: lists joined by "x")."""

    def fmt(v: Any) -> str:
        return "x".join(fmt(x) for x in v) if isinstance(v, list) else str(v)

    return f"{w['name']}[{','.join(f'{k}={fmt(v)}' for k, v in sorted(w['params'].items()))}]"


def throttle(doc: dict[str, Any], w: dict[str, Any] | None) -> str:
    """What throttled a workload's samples in one run: the NVML violation counters' ms
    (environment throttle_during_timing) or else the reasons its processes recorded; "-"."""
    if not w:
        return "-"
    seen = (doc["environment"].get("throttle_during_timing") or {}).get("workloads", {})
    totals: dict[str, float] = {}
    for process in seen.get(workload_id(w), []):
        for name, ms in process.get("violation_ms", {}).items():
            totals[name] = totals.get(name, 0.0) + ms
    if totals:
        return ", ".join(f"{name} {ms:.0f} ms" for name, ms in sorted(totals.items()))
    timing = w.get("timing") or {}
    reasons = sorted({r for p in timing.get("processes", []) for r in p["throttle_reasons"]})
    return ", ".join(reasons) or "-"


def slowest_table(clock: StageClock, count: int) -> list[str]:
    """The `count` slowest workloads of one run, with the stage each was in (a workload's
    seconds: from the one before it finished, or its stage began, until it finished)."""
    rows = ["| stage | workload | s |", "|---|---|---|"]
    for stage, label, seconds in sorted(clock.workloads, key=lambda x: -x[2])[:count]:
        rows.append(f"| {stage} | {label} | {seconds:.2f} |")
    return rows


def change_of(changes: list[str], run: int) -> str | None:
    """The `--change` that run `run` (0 = the first) commits: each in turn, none first."""
    return changes[(run - 1) % len(changes)] if run and changes else None


CUDA_SOURCES = (".cu", ".cuh", ".h", ".hpp")
ANY_KERNEL = "*"  # a commit whose change may reach any kernel (a header's line)
# A Python source's text replaced: a Triton kernel's knob, a compiled function's code or a
# workload's parameter; the documents say whose kernels it reached, as for ANY_KERNEL, but it
# rebuilds nothing else (the commit keeps BUDGET_S).
SOURCE_EDIT = "~"


def changed_kernels(changes: list[str], runs: int) -> list[set[str]]:
    """Per run, the kernels whose code its commit changed: `--change PATH:KERNEL` that kernel;
    `PATH:OLD=>NEW` in a CUDA source or header any kernel (ANY_KERNEL), in a Python source
    those it reached (SOURCE_EDIT): the documents say which, `code_changed`; none for the first
    run and for changes that leave every kernel's code as it was (a comment, prose, an unused
    kernel added)."""
    out: list[set[str]] = []
    for run in range(runs):
        path, _, kernel = (change_of(changes, run) or "").partition(":")
        if "=>" in kernel:
            suffix = Path(path).suffix
            marker = (
                ANY_KERNEL if suffix in CUDA_SOURCES else SOURCE_EDIT if suffix == ".py" else ""
            )
            out.append({marker} if marker else set())
        else:
            out.append({kernel} if kernel else set())
    return out


def code_changed(
    workloads: list[dict[str, Any] | None], changed: list[set[str]], kernels: list[str]
) -> list[set[str]]:
    """`changed` for one workload (its document entry per run, None where absent): a run whose
    change may reach any kernel (ANY_KERNEL, SOURCE_EDIT) changed this workload's when its
    kernels' `determinants` (what decided their ncu counters: the compiled code among it) moved
    since the run before, or cannot be compared; else not."""

    def determinants(w: dict[str, Any] | None) -> list[Any] | None:
        found = [k.get("determinants") for k in ((w or {}).get("ncu") or {}).get("kernels", [])]
        return found if found and all(found) else None

    out = []
    for run, names in enumerate(changed):
        if not names & {ANY_KERNEL, SOURCE_EDIT}:
            out.append(names)
            continue
        then, now = determinants(workloads[run - 1]), determinants(workloads[run])
        out.append(set(kernels) if then is None or then != now else set())
    return out


def compared_runs(
    kernels: list[str], changed: list[set[str]], present: list[bool] | None = None
) -> tuple[int, int] | None:
    """The two runs (indices) farthest apart between which none of `kernels` changed, or None;
    only runs where the workload is `present` (a commit that changes its parameters gives it
    another id: it is absent from that run on).

    A changed kernel may really run at another speed (its never-taken branch costs a compare):
    the runs before and after its change are not two measurements of one thing."""
    present = present or [True] * len(changed)
    versions = enumerate(itertools.accumulate(bool(c & set(kernels)) for c in changed))
    by_version = itertools.groupby(versions, lambda run_version: run_version[1])
    stretches = [[run for run, _ in same if present[run]] for _, same in by_version]
    longest = max(stretches, key=len)  # the earliest of the longest
    return (longest[0], longest[-1]) if len(longest) > 1 else None


def stability_table(
    docs: list[dict[str, Any]], changed: list[set[str]] | None = None
) -> tuple[list[str], int]:
    """Each workload's median in two runs of the same code (the first and the last where its
    kernels were not changed between them), PASS within STABLE_PCT from STABLE_MIN_US up."""
    changed = changed or [set() for _ in docs]
    by_run = [{key(w): w for w in doc["workloads"]} for doc in docs]
    rows = ["| workload | method | runs | first median us | second median us | diff % | verdict "
            "| throttled (first / second) |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    failures = 0
    for w in docs[0]["workloads"]:
        present = [key(w) in run for run in by_run]
        kernels = w.get("kernels") or []
        mine = code_changed([run.get(key(w)) for run in by_run], changed, kernels)
        pair = compared_runs(kernels, mine, present)
        if pair is None:
            why = "its kernel changed in each run" if all(present) else "in one run only"
            rows.append(f"| {key(w)} | - | - | - | - | - | ({why}) | - |")
            continue
        i, j = pair
        w1, w2 = by_run[i].get(key(w)), by_run[j].get(key(w))
        a, b = (w1 or {}).get("timing"), (w2 or {}).get("timing")
        if not a or not b:
            rows.append(f"| {key(w)} | - | - | - | - | - | no timing ({w['status']}) | - |")
            failures += w["status"] != "skipped"
            continue
        diff = 100.0 * (b["median"] - a["median"]) / a["median"]
        if a["median"] < STABLE_MIN_US:
            verdict = f"(< {STABLE_MIN_US:g} us)"
        else:
            verdict = "PASS" if abs(diff) <= STABLE_PCT else "FAIL"
            failures += verdict == "FAIL"
        throttled = f"{throttle(docs[i], w1)} / {throttle(docs[j], w2)}"
        rows.append(f"| {key(w)} | {a['method']} | {i + 1} / {j + 1} | {a['median']:.2f} | "
                    f"{b['median']:.2f} | {diff:+.2f} | {verdict} | {throttled} |")  # fmt: skip
    return rows, failures


def summary(doc: dict[str, Any]) -> str:
    ncu = [w["ncu"]["status"] for w in doc["workloads"] if w.get("ncu")]
    lines = [w["timeline"] for w in doc["workloads"] if w.get("timeline")]
    methods = [w["timing"]["method"] for w in doc["workloads"] if w.get("timing")]
    env = doc["environment"]
    return (
        f"status {doc['status']}; {len(doc['workloads'])} workloads; methods "
        f"{ {m: methods.count(m) for m in sorted(set(methods))} }; ncu "
        f"{ {s: ncu.count(s) for s in sorted(set(ncu))} }; timeline "
        f"{[t['source'] for t in lines]}; GPU {env['gpu']['name']} driver "
        f"{env.get('driver_version')} clocks {env.get('clocks_mhz')}; throttle reasons seen "
        f"{env.get('throttle_reasons_seen')} "
        f"{(env.get('throttle_during_timing') or {}).get('violation_ms', {})}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", help="regular expression over workload ids (default: all)")
    parser.add_argument(
        "--change",
        action="append",
        default=[],
        metavar="PATH",
        help="a CUDA source that each run after the first changes, in turn",
    )
    parser.add_argument("--out", type=Path, help="folder for the result documents")
    parser.add_argument(
        "--suite",
        type=Path,
        default=ROOT,
        help="the suite's folder (default: this repository's default suite)",
    )
    parser.add_argument(
        "--warm-up",
        action="store_true",
        help="first run the first commit once in a cache of its own, not counted (the host's "
        "caches warm, the runner's empty: a warm host's first commit)",
    )
    parser.add_argument("--repository-name", default=None)
    parser.add_argument("--author", default="kernelwatch benchmark <bench@kernelwatch.invalid>")
    parser.add_argument("--message", default="runner_cost: the working tree as one commit")
    parser.add_argument("--runner-name", help="the document's runner name (default: none)")
    parser.add_argument("--verbose", action="store_true", help="print the runs' log lines")
    parser.add_argument("--slowest", type=int, default=15, help="slowest workloads listed")
    parser.add_argument("--reread", type=Path, metavar="DIR",
                        help="print the tables of the runs an earlier --out kept (with its "
                             "--change list), e.g. of a run cut short")  # fmt: skip
    args = parser.parse_args(argv)
    if args.reread:
        return reread(args.reread, args.change)
    docs, clocks, totals = [], [], []
    runner = None
    if args.runner_name:
        runner = {"name": args.runner_name, "host": socket.gethostname(), "labels": {}}
    with tempfile.TemporaryDirectory(prefix="kw-runner-cost-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        sha = snapshot(args.suite, repo, args.author, args.message)
        print(f"suite repository {repo} at {sha[:12]}", flush=True)
        if args.warm_up:
            warm_up(repo, sha, args.only, Path(tmp) / "warm-up-cache", runner)
        for run in range(args.runs):
            if path := change_of(args.change, run):
                sha = change(repo, path, run + 1, args.author)
                print(f"run {run + 1}: commit {sha[:12]} changes {path}", flush=True)
            clock = StageClock(args.verbose)
            request = RunRequest(
                source=str(repo),
                rev=sha,
                only=args.only,
                branch="main",
                repository=args.repository_name,
                cache_dir=Path(tmp) / "cache",
                runner=runner,
            )
            started = time.perf_counter()
            doc = execute(request, clock)
            totals.append(time.perf_counter() - started)
            clock.finish()
            docs.append(doc)
            clocks.append(clock)
            print(f"run {run + 1}: {totals[-1]:.1f} s; {summary(doc)}", flush=True)
            for line in clock.lines:
                if "] ncu: " in line or "] build " in line:
                    print(f"run {run + 1}: {line}", flush=True)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"run-{run + 1}.json").write_text(json.dumps(doc, indent=1))
                clock_out = {"stages": clock.seconds(), "workloads": clock.workloads,
                             "log": clock.lines}  # fmt: skip
                (args.out / f"clock-{run + 1}.json").write_text(json.dumps(clock_out, indent=1))
    limits = budgets(args.change, len(totals))
    print("\n".join(stage_table(clocks, totals, docs, limits)))
    if args.slowest and clocks:
        print("\n".join(slowest_table(clocks[0], args.slowest)))
    changed = changed_kernels(args.change, len(docs))
    rows, failures = stability_table(docs, changed) if len(docs) > 1 else ([], 0)
    print("\n".join(rows))
    return verdict(totals, failures, limits)


def warm_up(repo: Path, sha: str, only: str | None, cache: Path, runner: Any) -> None:
    """One run of the first commit in a runner cache of its own, not counted: what the host
    keeps outside the runner's cache (CuPy's and the driver's compiled kernels, the files the
    tools load) is warm, as on a host that has run anything before, and the measured first
    run still starts with nothing built and no ncu section kept."""
    started = time.perf_counter()
    request = RunRequest(source=str(repo), rev=sha, only=only, branch="main", cache_dir=cache,
                         runner=runner)  # fmt: skip
    doc = execute(request, StageClock(False))
    print(f"warm-up: {time.perf_counter() - started:.1f} s, {doc['status']} (not counted)",
          flush=True)  # fmt: skip


def verdict(totals: list[float], failures: int, limits: list[float] | None = None) -> int:
    """The last line (runs within their budgets, stability failures) and the exit code."""
    limits = limits or [BUDGET_S] * len(totals)
    over = sum(t > b for t, b in zip(totals, limits, strict=True))
    within = f">= {STABLE_MIN_US:g} us within {STABLE_PCT:g}%"
    print(f"budget: {len(totals) - over} of {len(totals)} runs within theirs ({BUDGET_S:g} s, "
          f"{WIDE_BUDGET_S:g} s for the first and a header's); stability: {failures} FAIL "
          f"({within})")  # fmt: skip
    return 1 if failures or over else 0


class RecordedClock:
    """A run's stage clock as `--out` kept it (clock-N.json)."""

    def __init__(self, path: Path) -> None:
        kept = json.loads(path.read_text())
        self.stages: dict[str, float] = kept["stages"]
        self.workloads = [tuple(w) for w in kept.get("workloads", [])]

    def seconds(self) -> dict[str, float]:
        return self.stages


def reread(folder: Path, changes: list[str]) -> int:
    """The stage and stability tables of the runs kept in `folder` (run-N.json, clock-N.json;
    a run's total is its stages' sum), judged as `main` judges them."""
    count = len(list(folder.glob("run-*.json")))
    if not count:
        raise SystemExit(f"--reread {folder}: no run-N.json there")
    docs = [json.loads((folder / f"run-{n}.json").read_text()) for n in range(1, count + 1)]
    clocks = [RecordedClock(folder / f"clock-{n}.json") for n in range(1, count + 1)]
    totals = [sum(c.seconds().values()) for c in clocks]
    limits = budgets(changes, count)
    print("\n".join(stage_table(clocks, totals, docs, limits)))  # type: ignore[arg-type]
    rows, failures = stability_table(docs, changed_kernels(changes, count))
    print("\n".join(rows))
    return verdict(totals, failures, limits)


if __name__ == "__main__":
    sys.exit(main())

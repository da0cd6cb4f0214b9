"""Verdicts along a real history on a real GPU, with the truth beside them (issue 14, item 8).

    # on the GPU host (CuPy, cupti-python, nvcc; the service's wheels on PYTHONPATH):
    python -m benchmarks.history_gpu --out DIR [--budget 560]
    # ... or the history alone, its truth measured apart (each fits a device call):
    python -m benchmarks.history_gpu --out DIR --skip-truth
    # anywhere, again from what a run saved (with the truth of a --truth-only run):
    python -m benchmarks.history_gpu --table DIR/history.json [--truth TDIR/truth.json]
    # on the GPU host, the truth alone (each commit's code measured against its parent's):
    python -m benchmarks.history_gpu --truth-only TDIR [--since K] [--upto N]

A git repository of the small CUDA suite in benchmarks/history_suite (12 streaming kernels: four
of >= 50 us, four of 10-50 us, four of a few us; and three whose runs wander, histsuite/wander.py:
a tiled SGEMM, an SGEMM that spills its registers, an L2-bound kernel behind a large neighbour)
gets a history of 14 commits: a base, two A/A commits (a README
edit, a comment in the CUDA source), a step that makes nine of the streaming kernels read more
bytes (1.5-45% more, so that each class has changes below, at and above its detection target;
three kernels never change) and makes the tiled SGEMM spill (0.6 -> several ms, after which its
runs wander), three innocent commits, the fix (the extra reads and the spill go), an innocent
commit, then a second step (other sizes, near the targets; the spilling SGEMM does 12.5% more
steps, the L2-bound kernel two more passes of its eight), two innocent commits, its fix and
one more. Each commit is pushed to a real `kernelwatch serve` (SQLite) through
the signed webhook, one push at a time; a real `kernelwatch-runner agent` claims the jobs, runs
the suite (build, correctness, timing in several processes, and ncu on every launch of every
commit: no section reused, so that the work notices of identical code are seen), posts the
documents, and runs the confirmation the step's suspected regressions
queue. Then every adjacent pair of commits is measured by an instrument of its own
(benchmarks/history_truth.py: both builds in one process, interleaved A B / B A, L2 flushed,
the same timing method), and the table prints, per commit and series, the true change, what
kernelwatch reported, its verdict and its work notices, with the targets of the issue and
whether each regression found has its alert at its commit (benchmarks/history_table).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "history_suite"))

from histsuite.workloads import all_workloads, stream_workloads  # noqa: E402

from benchmarks.history_processes import process_medians  # noqa: E402
from benchmarks.history_table import Row, render  # noqa: E402
from benchmarks.webhook import post_push  # noqa: E402

SUITE = ROOT / "benchmarks" / "history_suite"
REPOSITORY = "bench/history"
SECRET, ADMIN = "history-secret", "history-admin"
# Extra bytes each kernel reads after a step, as a fraction of its 8 n bytes (w0, w4, w8 never
# change: A/A). The second step puts other kernels near their class's detection target.
STEPS = {
    "step": {1: 0.015, 2: 0.03, 3: 0.06, 5: 0.03, 6: 0.06, 7: 0.12, 9: 0.15, 10: 0.30, 11: 0.45},
    "step2": {1: 0.03, 2: 0.02, 3: 0.025, 5: 0.07, 6: 0.055, 7: 0.09, 9: 0.25, 10: 0.2, 11: 0.35},
}
STEP = STEPS["step"]
# What each commit kind sets in histsuite/cuda/wander.h (the wandering kernels' injections).
WANDER = {
    "step": {"TILED_SPILL": 1},
    "step2": {"SPILL_EXTRA_K": 256, "L2_EXTRA_PASSES": 2},
}
WANDER_SERIES = {"TILED_SPILL": "tiled[n=2048]", "SPILL_EXTRA_K": "spill[n=2048]",
                 "L2_EXTRA_PASSES": "l2[mb=16]"}  # fmt: skip
# (what the commit does, how): base, aa / innocent (readme or comment), step, fix.
HISTORY = [
    ("base", "base"),
    ("aa", "readme"),
    ("aa", "comment"),
    ("step", "step"),
    ("innocent", "readme"),
    ("innocent", "comment"),
    ("innocent", "readme"),
    ("fix", "fix"),
    ("innocent", "readme"),
    ("step", "step2"),
    ("innocent", "readme"),
    ("innocent", "comment"),
    ("fix", "fix"),
    ("innocent", "comment"),
]


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def extra_header(extras: dict[int, float]) -> str:
    lines = ["// Extra floats each workload's kernel reads from its pad buffer (the injection)."]
    for w in stream_workloads():
        index = w.params["w"]
        floats = round(extras.get(index, 0.0) * 2 * w.n / 4) * 4  # of 8 n bytes: 2 n floats
        lines.append(f"#define EXTRA_W{index} {floats}LL")
    return "\n".join(lines) + "\n"


def wander_header(settings: dict[str, int]) -> str:
    lines = ["// The wandering kernels' injections (benchmarks/history_gpu.py writes this file)."]
    lines += [f"#define {name} {settings.get(name, 0)}" for name in WANDER_SERIES]
    return "\n".join(lines) + "\n"


def make_repository(repo: Path) -> list[dict[str, Any]]:
    """The history's commits (oldest first): sha, what it did, each streaming kernel's extra
    reads and the wandering kernels' settings (`wander`)."""
    shutil.copytree(SUITE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    extras: dict[int, float] = {}
    wander: dict[str, int] = {}
    commits = []
    for i, (kind, how) in enumerate(HISTORY):
        if how == "readme":
            with (repo / "README.md").open("a") as f:
                f.write(f"Commit {i}: notes that change no kernel.\n")
        elif how == "comment":
            source = repo / "histsuite" / "cuda" / "stream.cu"
            source.write_text(source.read_text() + f"// commit {i}: a comment, the same code\n")
        elif how in (*STEPS, "fix"):
            extras = dict(STEPS.get(how, {}))
            (repo / "histsuite" / "cuda" / "extra.h").write_text(extra_header(extras))
            wander = dict(WANDER.get(how, {}))
            (repo / "histsuite" / "cuda" / "wander.h").write_text(wander_header(wander))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{kind}: commit {i} ({how})")
        commits.append({"index": i, "sha": git(repo, "rev-parse", "HEAD"), "kind": kind,
                        "how": how, "extras": dict(extras), "wander": dict(wander)})  # fmt: skip
    return commits


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(cmd: list[str], env: dict[str, str], logfile: Path) -> Iterator[subprocess.Popen]:
    with logfile.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def push(url: str, repo: Path, commit: dict[str, Any], repository: str = REPOSITORY,
         earlier: list[dict[str, Any]] = ()) -> None:  # fmt: skip
    """A push of `commit`, with the `earlier` commits of the same push before it."""
    sha = commit["sha"]
    entries = [{"id": c["sha"], "message": f"commit {c['index']}",
                "timestamp": "2026-11-25T12:00:00Z",
                "author": {"name": "Bench", "email": "bench@example.com"}}
               for c in [*earlier, commit]]  # fmt: skip
    payload = {
        "ref": "refs/heads/main",
        "before": "0" * 39 + "1",
        "after": sha,
        "deleted": False,
        "commits": entries,
        "head_commit": entries[-1],
        "repository": {
            "full_name": repository,
            "name": repository.split("/")[-1],
            "owner": {"login": repository.split("/")[0]},
            "clone_url": str(repo),
        },
    }
    answer = post_push(url, SECRET, payload)
    answer.raise_for_status()


def pushed_before(client: httpx.Client, sha: str, repository: str = REPOSITORY) -> bool:
    """Whether a run job of `sha` exists (an earlier call pushed it and was cut off: the agent
    that stopped gave the job back to the queue)."""
    jobs = client.get("/api/v1/jobs", params={"repository": repository}).json()
    return any(j["kind"] == "run" and j["commit"] == sha for j in jobs)


def settled(client: httpx.Client, sha: str, repository: str = REPOSITORY) -> bool:
    """No job waits or runs, the commit's verdicts are in, and no alert waits to be confirmed."""
    jobs = client.get("/api/v1/jobs", params={"repository": repository}).json()
    if any(j["state"] in ("queued", "running") for j in jobs):
        return False
    failed = [j for j in jobs if j["state"] == "failed"]
    if failed:
        raise RuntimeError(f"job failed: {failed[0]['failure'][-2000:]}")
    metrics = client.get(f"/api/v1/commits/{sha}/metrics")
    if metrics.status_code == 404:
        return False
    body = metrics.json()
    if body["analysis_pending"] or body["change_points_pending"]:
        return False
    return all(a["state"] != "suspected" for a in client.get("/api/v1/alerts").json())


def series_key(workload: str, params: dict[str, Any]) -> str:
    """'block[cols=8192,rows=8192]': a series as the tables name it."""
    return f"{workload}[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"


def reported_by_series(metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A commit's metrics answer as series key -> its (last) metric: change, verdict, note."""
    out = {}
    for w in metrics["workloads"]:
        for k in w["kernels"]:
            for m in k["metrics"]:
                out[series_key(w["workload"], w["params"])] = m
    return out


def record_history(
    work: Path,
    commits: list[dict[str, Any]],
    deadline: float,
    repository: str = REPOSITORY,
    ncu_reuse: bool = False,
    earlier: dict[str, Any] | None = None,
    agent_args: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Push each commit of the repository in `work`/repo, let the real agent measure it (and
    confirm what it suspects). `earlier`: what an earlier call on the same `work` reported of
    its commits when each settled (its "at_push"): the service and the agent go on from there
    (the runner's token rotated), and the end reads those commits again too."""
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": f"sqlite:///{work / 'kernelwatch.db'}",
           "KERNELWATCH_WEBHOOK_SECRET": SECRET, "KERNELWATCH_ADMIN_TOKEN": ADMIN,
           "KERNELWATCH_DATA_DIR": str(work / "data"), "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS": "1",
           # Every launch profiled at every commit: a reused section would hide how much a
           # counter of identical code moves from run to run (the work notices).
           "KERNELWATCH_NCU_REUSE": "1" if ncu_reuse else "0"}  # fmt: skip
    py = sys.executable
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    reported: dict[str, Any] = dict(earlier or {})
    client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    with client, running([py, "-m", "service.cli", "serve", "--port", str(port)], env,
                         work / "service.log"):  # fmt: skip
        _wait(lambda: client.get("/healthz").status_code == 200, 60)
        again = ["--rotate"] if earlier else []
        token = subprocess.run(
            [py, "-m", "service.cli", "runner-token", "create", "h100-a", "--labels", "gpu=h100",
             *again], env=env, cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        agent = [py, "-m", "runner.cli", "agent", "--server", url, "--token", token, "--poll",
                 "0.5", "--spool", str(work / "spool"), "--cache", str(work / "cache"),
                 *agent_args]  # fmt: skip
        with running(agent, env, work / "agent.log"):
            longest, held, seconds = 0.0, [], {}
            for commit in commits:
                if commit.get("with_next"):  # pushed with the next commit, as one push
                    held.append(commit)
                    continue
                if time.monotonic() + longest > deadline:  # it would not finish: keep the rest
                    log(f"budget spent: stopping before commit {commit['index']}")
                    break
                started = time.monotonic()
                if not (earlier and pushed_before(client, commit["sha"], repository)):
                    push(url, work / "repo", commit, repository, held)  # else its job is queued
                pushed_with, held = held, []
                try:
                    _wait(lambda c=commit: settled(client, c["sha"], repository),
                          deadline - time.monotonic())  # fmt: skip
                except TimeoutError:
                    log(f"budget spent during commit {commit['index']}: the ones before are kept")
                    answer = client.get(f"/api/v1/commits/{commit['sha']}/metrics")
                    if answer.status_code == 200:  # judged, its confirmation cut short
                        reported[commit["sha"]] = answer.json()
                    break
                longest = max(longest, time.monotonic() - started)
                seconds[commit["sha"][:12]] = time.monotonic() - started
                log(f"commit {commit['index']} ({commit['kind']}) measured and judged in "
                    f"{time.monotonic() - started:.0f} s")  # fmt: skip
                for c in [*pushed_with, commit]:  # one pushed before it has no run of its own
                    answer = client.get(f"/api/v1/commits/{c['sha']}/metrics")
                    if answer.status_code == 200:
                        reported[c["sha"]] = answer.json()
        # What each commit says at the end: a verdict pending when its commit was pushed (a
        # level of one run) is settled by the next run.
        at_push = reported
        again = {sha: client.get(f"/api/v1/commits/{sha}/metrics") for sha in at_push}
        reported = {sha: a.json() for sha, a in again.items() if a.status_code == 200}
        alerts = [client.get(f"/api/v1/alerts/{a['id']}").json()
                  for a in client.get("/api/v1/alerts").json()]  # fmt: skip
        jobs = client.get("/api/v1/jobs", params={"repository": repository}).json()
    return {"reported": reported, "at_push": at_push, "alerts": alerts, "jobs": jobs,
            "seconds": seconds}  # fmt: skip


def _wait(ready: Any, timeout: float) -> None:
    deadline = time.monotonic() + max(timeout, 1)
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        time.sleep(0.5)
    raise TimeoutError("timed out waiting")


def measure_truth(work: Path, commits: list[dict[str, Any]]) -> dict[str, Any]:
    """Every adjacent pair, interleaved, by benchmarks/history_truth.py."""
    builds: dict[str, str] = {}
    names = []
    for commit in commits:
        tree = work / "truth" / commit["sha"][:12]
        git(work / "repo", "worktree", "add", "-q", "--detach", str(tree), commit["sha"])
        source = "".join((tree / "histsuite" / "cuda" / h).read_text()
                         for h in ("extra.h", "wander.h"))  # fmt: skip
        name = hashlib.sha1(source.encode()).hexdigest()[:10]  # one build per distinct kernel
        if name not in builds:
            out = work / "truth" / f"build-{name}"
            subprocess.run([sys.executable, "-m", "histsuite.build", "--out", str(out)],
                           cwd=tree, check=True, capture_output=True)  # fmt: skip
            builds[name] = str(out)
        names.append(name)
    pairs = [[names[i - 1], names[i]] for i in range(1, len(names))]
    spec = work / "truth-pairs.json"
    spec.write_text(json.dumps({"builds": builds, "pairs": pairs}))
    result = work / "truth.json"
    subprocess.run([sys.executable, "-m", "benchmarks.history_truth", str(spec), str(result)],
                   cwd=ROOT, check=True)  # fmt: skip
    measured = json.loads(result.read_text())["pairs"]
    return {commits[i]["sha"]: measured[f"{a}..{b}"] for i, (a, b) in enumerate(pairs, start=1)}


def _duration_class(median_us: float) -> str:
    return "long" if median_us >= 50 else "mid" if median_us >= 10 else "short"


def _setting(commit: dict[str, Any], w: Any) -> float:
    """What the commit set for workload `w`: its extra reads, or its wander.h setting."""
    if w.name == "stream":
        extras = commit["extras"]
        return extras.get(str(w.params["w"]), extras.get(w.params["w"], 0.0))
    name = next(k for k, wid in WANDER_SERIES.items() if wid == w.id)
    return commit.get("wander", {}).get(name, 0)


def rows(saved: dict[str, Any]) -> list[Row]:
    workloads = {w.id: w for w in all_workloads()}
    by_params = {(w.name, json.dumps(w.params, sort_keys=True)): w.id for w in workloads.values()}
    alerts = saved.get("alerts")
    # (commit, series) of every alert a person would still see (a dismissed one is gone).
    alerted = {
        (a["commit"], by_params.get((a["series"]["workload"],
                                     json.dumps(a["series"]["params"], sort_keys=True))))
        for a in alerts or []
        if a["state"] != "dismissed"
    }  # fmt: skip
    out = []
    changed_before: set[str] = set()
    previous: dict[str, float] = {}
    classes: dict[str, str] = {}
    for commit in saved["commits"]:
        metrics = saved["reported"].get(commit["sha"])
        if metrics is None:
            break
        truth = saved.get("truth", {}).get(commit["sha"]) or saved.get("truth_by_index", {}).get(
            str(commit["index"]), {}
        )
        series: dict[str, dict[str, Any]] = {}
        notices: dict[str, list[str]] = {}
        first: dict[str, str] = {}  # the verdict when the commit was pushed, where it differs
        for w in saved.get("at_push", {}).get(commit["sha"], {}).get("workloads", []):
            wid = by_params.get((w["workload"], json.dumps(w["params"], sort_keys=True)))
            for k in w["kernels"]:
                for m in k["metrics"]:
                    if wid is not None and m.get("verdict"):
                        first[wid] = m["verdict"]
        for w in metrics["workloads"]:
            wid = by_params.get((w["workload"], json.dumps(w["params"], sort_keys=True)))
            if wid is None:
                continue
            for k in w["kernels"]:
                for m in k["metrics"]:
                    series[wid] = m
                notices.setdefault(wid, []).extend(
                    f"{k['kernel']} {n['note']}"
                    for n in k.get("work", [])
                    if n["verdict"] == "changed"
                )
        for wid, w in workloads.items():
            setting = _setting(commit, w)
            changed = commit["index"] > 0 and setting != previous.get(wid, 0)
            m, true = series.get(wid, {}), truth.get(wid, {})
            if not m and wid not in classes:
                continue  # not measured yet (or never, in a history saved before it existed)
            if wid not in classes:
                classes[wid] = (w.params.get("cls") if w.name == "stream"
                                else _duration_class(m["statistics"]["median"]))  # fmt: skip
            spread = true.get("placement_changes")
            out.append(Row(
                commit=commit["index"], kind=commit["kind"], series=wid,
                cls=classes.get(wid, "long"), changed=changed,
                after_shift=wid in changed_before and not changed,
                truth=true.get("change"), reported=m.get("change"), verdict=m.get("verdict"),
                truth_se=float(np.std(spread, ddof=1) / np.sqrt(len(spread)))
                if spread and len(spread) > 1 else None,
                notices=tuple(notices.get(wid, [])), wanders=w.name != "stream",
                first=first.get(wid) if first.get(wid) != m.get("verdict") else None,
                alerted=None if alerts is None else (commit["sha"], wid) in alerted,
            ))  # fmt: skip
            if changed:
                changed_before.add(wid)
            previous[wid] = setting
    return out


def _load(path: Path) -> dict[str, Any]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return json.loads(data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=Path, help="record on this GPU host; results go here")
    what.add_argument("--table", type=Path, help="print the table of a saved history.json")
    what.add_argument(
        "--truth-only", type=Path, metavar="OUT", help="measure only the truth of the history"
    )
    p.add_argument(
        "--truth", type=Path, help="with --table: the truth from a --truth-only run instead"
    )
    p.add_argument(
        "--upto", type=int, help="with --truth-only: the first UPTO commits (those a run measured)"
    )
    p.add_argument(
        "--since",
        type=int,
        default=1,
        help="with --truth-only: from commit SINCE on (each against its parent; an earlier run "
        "measured those before)",
    )
    p.add_argument("--budget", type=float, default=560.0, help="wall seconds for the history")
    p.add_argument(
        "--skip-truth",
        action="store_true",
        help="with --out: record the history only (measure the truth with --truth-only)",
    )
    p.add_argument("--work", type=Path, default=Path("/tmp/kw-history"))
    args = p.parse_args(argv)
    if args.truth_only:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        commits = make_repository(args.work / "repo")
        started = time.monotonic()
        by_sha = measure_truth(args.work, commits[max(args.since - 1, 0) : args.upto])
        args.truth_only.mkdir(parents=True, exist_ok=True)
        by_index = {str(c["index"]): by_sha[c["sha"]] for c in commits if c["sha"] in by_sha}
        (args.truth_only / "truth.json").write_text(json.dumps({"truth_by_index": by_index}))
        log(f"truth measured in {time.monotonic() - started:.0f} s")
        return 0
    if args.table:
        saved = _load(args.table)
        if args.truth:
            saved.pop("truth", None)
            saved.update(_load(args.truth))
    else:
        deadline = time.monotonic() + args.budget
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        commits = make_repository(args.work / "repo")
        started = time.monotonic()
        saved = {"commits": commits, **record_history(args.work, commits, deadline)}
        saved["history_seconds"] = time.monotonic() - started
        indices = {c["sha"]: c["index"] for c in commits}
        saved["process_medians"] = process_medians(args.work / "kernelwatch.db", indices)
        measured = [c for c in commits if c["sha"] in saved["reported"]]
        if not args.skip_truth:
            started = time.monotonic()
            saved["truth"] = measure_truth(args.work, measured)
            saved["truth_seconds"] = time.monotonic() - started
            log(f"truth measured in {saved['truth_seconds']:.0f} s")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "history.json").write_text(json.dumps(saved, indent=1))
        shutil.copy(args.work / "kernelwatch.db", args.out / "kernelwatch.db")
        for name in ("agent.log", "service.log"):
            shutil.copy(args.work / name, args.out / name)
    table = render(rows(saved))
    print(table)
    return 0 if "FAIL" not in table else 1


if __name__ == "__main__":
    sys.exit(main())

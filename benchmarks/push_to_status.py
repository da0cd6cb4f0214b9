"""From a signed push to the commit status on GitHub (issue 33, item 4), end to end.

    # on the GPU host (the service's wheels on PYTHONPATH), the default suite:
    python -m benchmarks.push_to_status [--change kernels/cuda/transpose.cu:transpose_tiled]
        [--no-launch-signatures] [--runs-per-kind 1] [--work DIR]
    # any suite, e.g. a CPU one with a CPU agent:
    python -m benchmarks.push_to_status --suite DIR --change 'PATH:OLD=>NEW' --cpu

A git repository of the suite (benchmarks/runner_cost.snapshot) is pushed to a real `kernelwatch
serve` (SQLite) through the signed webhook; a real `kernelwatch-runner agent` on this host
claims the job, runs the suite and posts the result, and the service posts the commit's status
to GitHub, here a stand-in on 127.0.0.1 that records each status and when it came. The first
push is the host's first commit (nothing built, no ncu section kept); then commits that each make
one `--change` (benchmarks/runner_cost.change: one kernel's code, a Python comment, a parameter)
are pushed one at a time. Prints, per commit, the seconds from the push to its final status
(success, failure or error: the first that is not pending) against the budget of 90 s, and the
runner's seconds per stage from its log. Exits 1 when a commit after the first misses it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.history_gpu import SECRET, _wait, free_port, push, running  # noqa: E402
from benchmarks.runner_cost import change, snapshot  # noqa: E402

BUDGET_S = 90.0  # issue 33: a one-kernel change from push to status
REPOSITORY = "bench/push-to-status"
ADMIN = "push-to-status-admin"
AUTHOR = "kernelwatch benchmark <bench@kernelwatch.invalid>"
STATUS_PATH = re.compile(r"^/repos/([^/]+/[^/]+)/statuses/([0-9a-f]{40})$")


class GitHubStandIn:
    """A local stand-in for GitHub's REST API: records every commit status posted, with the
    monotonic time it arrived, and answers 201."""

    def __init__(self) -> None:
        self.statuses: list[dict[str, Any]] = []
        recorded = self.statuses

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                arrived = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                found = STATUS_PATH.match(self.path)
                if found:
                    recorded.append({"sha": found.group(2), "at": arrived, **body})
                answer = json.dumps({"id": len(recorded)}).encode()
                self.send_response(201 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def final(self, sha: str) -> dict[str, Any] | None:
        """The first status of `sha` that is not pending."""
        return next((s for s in self.statuses if s["sha"] == sha and s["state"] != "pending"),
                    None)  # fmt: skip

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_NAME = r"((?:[^()]|\([^()]*\))+)"  # a stage's name, e.g. "timing 4/6 (short)"
_TOOK = (
    re.compile(rf"stage .*\({_NAME} took ([\d.]+) s\)$"),  # on the next stage's line
    re.compile(rf"{_NAME} took ([\d.]+) s$"),  # the last stage's, when the job ends
)


def stage_seconds(log: str, job: int) -> str:
    """The runner's stages of one job as its log says them: 'build 1.8, correctness 5.4, ...'."""
    took = []
    for line in log.splitlines():
        _, mark, said = line.partition(f"job {job}: ")
        found = mark and (_TOOK[0].match(said) or _TOOK[1].match(said))
        if found:
            took.append(f"{found.group(1)} {float(found.group(2)):.1f}")
    return ", ".join(took)


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    (work / "repo").mkdir(parents=True)
    first = snapshot(args.suite, work / "repo", AUTHOR, "the suite")
    github = GitHubStandIn()
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": f"sqlite:///{work / 'kernelwatch.db'}",
           "KERNELWATCH_WEBHOOK_SECRET": SECRET, "KERNELWATCH_ADMIN_TOKEN": ADMIN,
           "KERNELWATCH_DATA_DIR": str(work / "data"), "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS": "1",
           "KERNELWATCH_GITHUB_TOKEN": "ghp_stand_in",
           "KERNELWATCH_GITHUB_API_URL": github.url}  # fmt: skip
    if args.no_launch_signatures:  # reuse of ncu sections by the commit's files alone
        env["KERNELWATCH_LAUNCH_SIGNATURES"] = "0"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    py = sys.executable
    rows = []
    try:
        with running([py, "-m", "service.cli", "serve", "--port", str(port)], env,
                     work / "service.log"):  # fmt: skip
            with httpx.Client(base_url=url, timeout=30) as client:
                _wait(lambda: client.get("/healthz").status_code == 200, 60)
            token = subprocess.run(
                [py, "-m", "service.cli", "runner-token", "create", "bench", *args.labels],
                env=env, cwd=ROOT, capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
            agent = [py, "-m", "runner.cli", "agent", "--server", url, "--token", token,
                     "--poll", "0.2", "--spool", str(work / "spool"), "--cache",
                     str(work / "cache"), *(["--cpu"] if args.cpu else [])]  # fmt: skip
            with running(agent, env, work / "agent.log"):
                shas: list[tuple[str, str | None]] = [("first commit", first)]
                shas += [(spec, None) for spec in args.change * args.runs_per_kind]
                for job, (what, sha) in enumerate(shas, start=1):
                    if sha is None:
                        sha = change(work / "repo", what, job, AUTHOR)
                    started = time.monotonic()
                    push(url, work / "repo", {"sha": sha, "index": job}, REPOSITORY)
                    _wait(lambda s=sha: github.final(s) is not None, args.timeout)
                    status = github.final(sha)
                    assert status is not None
                    log = (work / "agent.log").read_text()
                    rows.append({"commit": what, "sha": sha, "seconds": status["at"] - started,
                                 "state": status["state"], "description": status["description"],
                                 "stages": stage_seconds(log, job)})  # fmt: skip
                    print(f"{what}: status {status['state']} {status['at'] - started:.1f} s "
                          f"after the push", flush=True)  # fmt: skip
    finally:
        github.close()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| commit | push -> final status (s) | budget | state | runner's stages (s) |",
             "|---|--:|---|---|---|"]  # fmt: skip
    for i, r in enumerate(rows):
        verdict = "" if i == 0 else ("PASS" if r["seconds"] <= BUDGET_S else "FAIL")
        lines.append(f"| {r['commit']} | {r['seconds']:.1f} | {verdict or '(first)'} | "
                     f"{r['state']}: {r['description']} | {r['stages']} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", type=Path, default=ROOT, help="the suite's folder (default: this)")
    p.add_argument("--change", action="append", default=None, metavar="SPEC",
                   help="each commit after the first makes one (runner_cost.change)")  # fmt: skip
    p.add_argument("--runs-per-kind", type=int, default=1)
    p.add_argument("--cpu", action="store_true", help="a CPU agent (a CPU suite)")
    p.add_argument("--labels", nargs="*", default=[], help="the runner token's labels")
    p.add_argument("--no-launch-signatures", action="store_true",
                   help="$KERNELWATCH_LAUNCH_SIGNATURES=0 for the agent (issue 33)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a status")
    p.add_argument("--work", type=Path, default=Path("/tmp/kw-push-to-status"))
    p.add_argument("--out", type=Path, help="write the rows here as JSON")
    args = p.parse_args(argv)
    args.change = args.change or ["kernels/cuda/transpose.cu:transpose_tiled"]
    if args.labels:
        args.labels = ["--labels", ",".join(args.labels)]
    rows = measure(args)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0 if all(r["seconds"] <= BUDGET_S for r in rows[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Real processes for the end-to-end tests: a service, a runner agent, a signed push webhook."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from benchmarks.webhook import post_push

SECRET = "e2e-secret"
ADMIN = "e2e-admin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(
    ready: Callable[[], bool], proc: subprocess.Popen | None = None, timeout: float = 60
) -> None:
    """Poll `ready` until it holds; fail early if `proc` exits, or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode}")
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:g} s waiting")


@contextlib.contextmanager
def service_process(
    db_url: str, tmp_path: Path, command: list[str], cwd: Path | None = None
) -> Iterator[tuple[str, dict[str, str]]]:
    """`command serve` on a free port with a webhook secret and an admin token: (url, env)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWATCH_")}
    env.update(
        KERNELWATCH_DATABASE_URL=db_url,
        KERNELWATCH_WEBHOOK_SECRET=SECRET,
        KERNELWATCH_ADMIN_TOKEN=ADMIN,
        KERNELWATCH_DATA_DIR=str(tmp_path / "data"),
        # The tests' repositories are local paths: the service and the agent both allow them.
        KERNELWATCH_ALLOW_LOCAL_CLONE_URLS="1",
    )
    port = free_port()
    with open(tmp_path / "service.log", "w") as log:
        proc = subprocess.Popen(
            [*command, "serve", "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, proc)
            yield url, env
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@contextlib.contextmanager
def agent_process(
    command: list[str],
    url: str,
    token: str,
    tmp_path: Path,
    env: dict[str, str],
    *extra: str,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen]:
    """`command agent` against `url` until the block ends; then SIGTERM, as an operator would."""
    args = ["agent", "--server", url, "--token", token, "--spool", str(tmp_path / "spool")]
    args += ["--cache", str(tmp_path / "cache"), *extra]
    with open(tmp_path / "agent.log", "w") as log:
        agent = subprocess.Popen(
            [*command, *args], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield agent
        finally:
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=120)


def push(url: str, repo: Path, repository: str, after: str, commits: list[str]) -> list[int]:
    """A signed GitHub push of `commits` (oldest first) to main; the job ids it queued."""
    from tests.service.api.routes.test_webhooks import push_payload

    payload = push_payload(after=after, repo=repository, commits=commits)
    payload["repository"]["clone_url"] = str(repo)
    answer = post_push(url, SECRET, payload)
    assert answer.status_code == 202, answer.text
    return answer.json()["job_ids"]


def job(url: str, job_id: int) -> dict:
    return httpx.get(f"{url}/api/v1/jobs/{job_id}").json()


def tail(path: Path, chars: int = 4000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


@contextlib.contextmanager
def demo_process(tmp_path: Path) -> Iterator[str]:
    """`kernelwatch demo` as a person starts it (its data under tmp_path): its URL."""
    port = free_port()
    exe = Path(sys.executable).with_name("kernelwatch")
    env = {"KERNELWATCH_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    with open(tmp_path / "demo.log", "w") as log:
        proc = subprocess.Popen(
            [exe, "demo", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: httpx.get(f"{url}/healthz").status_code == 200, proc, timeout=180)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=20)

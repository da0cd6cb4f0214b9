"""The whole product on a CPU fixture suite: push webhook → queue → agent → results → API.

Real processes talk over real HTTP: `kernelwatch serve`, `kernelwatch-runner agent`, git.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.documents import sha_for
from tests.runner.gitrepo import cpu_suite_repo
from tests.service.test_webhook import push_payload

BIN = Path(sys.executable).parent
SECRET = "e2e-secret"
ADMIN = "e2e-admin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def service(db_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWATCH_")}
    env.update(
        KERNELWATCH_DATABASE_URL=db_url,
        KERNELWATCH_WEBHOOK_SECRET=SECRET,
        KERNELWATCH_ADMIN_TOKEN=ADMIN,
        KERNELWATCH_DATA_DIR=str(tmp_path / "data"),
    )
    port = _free_port()
    log = open(tmp_path / "service.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [BIN / "kernelwatch", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, proc)
        yield url, env
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _wait_for(ready, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited with {proc.returncode}")
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def _push(url: str, repo: Path, after: str, commits: list[str]) -> list[int]:
    payload = push_payload(after=after, repo="acme/cpu-suite", commits=commits)
    payload["repository"]["clone_url"] = str(repo)
    body = json.dumps(payload).encode()
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    answer = httpx.post(
        f"{url}/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={signature}",
            "Content-Type": "application/json",
        },
    )
    assert answer.status_code == 202, answer.text
    return answer.json()["job_ids"]


def _job_state(url: str, job_id: int) -> str:
    return httpx.get(f"{url}/api/v1/jobs/{job_id}").json()["state"]


def _alert_states(url: str) -> set[str]:
    return {a["state"] for a in httpx.get(f"{url}/api/v1/alerts").json()}


def test_push_to_regression_verdict(service, tmp_path: Path) -> None:
    url, env = service
    repo, first, second = cpu_suite_repo(tmp_path / "repo")
    token = subprocess.run(
        [BIN / "kernelwatch", "runner-token", "create", "cpu-runner", "--labels", "os=linux"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    agent_log = open(tmp_path / "agent.log", "w")  # noqa: SIM115 - closed below
    agent = subprocess.Popen(
        [
            BIN / "kernelwatch-runner",
            "agent",
            "--server",
            url,
            "--token",
            token,
            "--poll",
            "0.3",
            "--spool",
            str(tmp_path / "spool"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        env=env,
        stdout=agent_log,
        stderr=subprocess.STDOUT,
    )
    try:
        (job1,) = _push(url, repo, first, [first])
        _wait_for(lambda: _job_state(url, job1) == "succeeded", agent, timeout=120)
        (job2,) = _push(url, repo, second, [second])
        _wait_for(lambda: _job_state(url, job2) == "succeeded", agent, timeout=120)
        # The regression is suspected, then confirmed by the same runner, base and head
        # interleaved: the alerts open.
        _wait_for(lambda: _alert_states(url) == {"open"}, agent, timeout=180)
    finally:
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=60)
        agent_log.close()
    assert code == 0, (tmp_path / "agent.log").read_text()[-3000:]
    metrics = httpx.get(f"{url}/api/v1/commits/{second[:12]}/metrics").json()
    assert metrics["commit"]["parents"] == [first]
    assert metrics["runs"][0]["status"] == "succeeded"
    measured = [k["metrics"][0] for w in metrics["workloads"] for k in w["kernels"] if k["metrics"]]
    assert len(measured) == 2
    for metric in measured:
        assert metric["baseline"]["commit"] == first
        assert metric["change"] > 0.5, metric  # REPEAT 1 → 4: really slower
        assert metric["verdict"] == "regressed", metric["analysis"]
    alerts = httpx.get(f"{url}/api/v1/alerts").json()
    assert len(alerts) == 2
    for alert in alerts:
        assert alert["commit"] == second
        assert alert["base_commit"] == first
        assert alert["confirmed_change"] > 0.5
    confirm_job = httpx.get(f"{url}/api/v1/jobs/{alerts[0]['confirm_job_id']}").json()
    assert (confirm_job["kind"], confirm_job["state"]) == ("confirm", "succeeded")
    runners = httpx.get(f"{url}/api/v1/runners").json()
    assert runners[0]["name"] == "cpu-runner"
    assert runners[0]["current_job_id"] is None
    assert not list((tmp_path / "spool").glob("*.json"))
    assert sha_for("unused") not in metrics["commit"]["sha"]

"""runner.agent.loop: the runner agent against the real service (uvicorn over SQLite and
PostgreSQL), and its signal handling.

`run_job` stands in for the pipeline: it returns a valid result document for the claimed commit.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from runner.agent.client import ServiceClient, ServiceRefused, ServiceUnavailable
from runner.agent.loop import EXIT_HOST, Agent, stop_on_signals
from runner.agent.spool import Backoff, Spool
from runner.host.checks import HostError
from runner.run.pipeline import JobInterrupted
from service.core.settings import Settings
from service.models import Job, Run, Runner
from service.store.jobs import queue
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import expire_leases, make_jobs, make_runner

ROOT = Path(__file__).resolve().parents[3]
RUNNER = "h100-a"


def result_for(claim: dict[str, Any]) -> dict[str, Any]:
    """What the pipeline would return for this claim: a valid document of its commit."""
    doc = document(commit=claim["job"]["commit"], repository=claim["job"]["repository"])
    doc["job_id"], doc["lease_token"] = claim["job"]["id"], claim["attempt_token"]
    doc["runner"]["name"] = RUNNER
    return doc


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.02)


def job_row(engine: Engine, job_id: int) -> Any:
    with engine.connect() as conn:
        return conn.execute(select(Job).where(Job.id == job_id)).one()


def runner_row(engine: Engine) -> Any:
    with engine.connect() as conn:
        return conn.execute(select(Runner)).one()


def runs_stored(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(select(Run.run_uuid)).scalars())


class Running:
    """`agent.run_forever()` in a thread, stopped (and awaited) on leaving."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.code = self.agent.run_forever()

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def stop(self, graceful: bool = True, timeout: float = 10.0) -> float:
        start = time.monotonic()
        self.agent.stop(graceful)
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the agent did not stop"
        return time.monotonic() - start

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.stop()


@pytest.fixture
def token(engine: Engine) -> str:
    return make_runner(engine, RUNNER, {"gpu": "h100"})


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    return Spool(tmp_path / "spool")


@pytest.fixture
def make_agent(spool: Spool) -> Iterator[Callable[..., Agent]]:
    clients: list[ServiceClient] = []

    def make(url: str, token: str, run_job: Callable, **options: Any) -> Agent:
        client = ServiceClient(url, token, timeout=5)
        clients.append(client)
        options = {"poll_interval": 0.05, "backoff": Backoff(0.05, 0.2), **options}
        return Agent(
            client,
            run_job,
            spool=spool,
            labels={"cuda": "13"},
            environment={"gpu": "NVIDIA H100 80GB HBM3"},
            host="gpu-host-01",
            **options,
        )

    yield make
    for client in clients:
        client.close()


def test_one_job_is_claimed_run_and_posted(
    server: LiveServer,
    engine: Engine,
    token: str,
    spool: Spool,
    make_agent: Callable,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (job_id,) = make_jobs(engine, 1)
    posted: list[str] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        assert claim["clone_url"] == "https://example.com/acme/kernels.git"
        doc = result_for(claim)
        posted.append(doc["run_id"])
        return doc

    with Running(make_agent(server.url, token, run_job)) as running:
        wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the job to succeed")
        assert running.stop() < 2
    assert running.code == 0
    assert runs_stored(engine) == posted
    assert spool.pending() == []
    runner = runner_row(engine)
    assert runner.host == "gpu-host-01"
    assert runner.labels == {"gpu": "h100"}  # the token's: what the host reports is apart
    assert runner.reported_labels == {"cuda": "13"}
    assert "its token does not carry claim nothing: {'cuda': '13'}" in caplog.text
    assert runner.environment == {"gpu": "NVIDIA H100 80GB HBM3"}
    assert runner.current_job_id is None


def test_a_failing_job_is_requeued_with_its_log_tail(
    server: LiveServer, engine: Engine, token: str, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)
    agents: list[Agent] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        agents[0].stop()  # one attempt only, so the requeued job is seen before a second claim
        raise RuntimeError("nvcc exploded: out of memory")

    agents.append(make_agent(server.url, token, run_job))
    with Running(agents[0]) as running:
        running.thread.join(10)
    assert running.code == 0
    job = job_row(engine, job_id)
    assert (job.state, job.attempt, job.runner_id) == ("queued", 1, None)
    assert "RuntimeError: nvcc exploded: out of memory" in job.failure
    assert "Traceback" in job.failure


def test_a_host_fault_releases_the_job_and_stops_claiming(
    server: LiveServer, engine: Engine, token: str, make_agent: Callable
) -> None:
    """The GPU stack broke under the agent: the job goes back to the queue unfailed (no attempt
    counted against it), and the agent claims nothing more."""
    job_ids = make_jobs(engine, 2)
    claimed: list[int] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        claimed.append(claim["job"]["id"])
        raise HostError("this host cannot run the CUDA suite 'kernels': gpu missing: no device")

    with Running(make_agent(server.url, token, run_job)) as running:
        running.thread.join(10)
        assert not running.thread.is_alive(), "the agent kept going on a broken host"
    assert running.code == EXIT_HOST
    assert len(claimed) == 1  # the second job is left for a healthy runner
    for job_id in job_ids:
        job = job_row(engine, job_id)
        assert (job.state, job.attempt, job.runner_id) == ("queued", 0, None), job
        assert not job.failure
    runner = runner_row(engine)  # the service marks it, so that a person sees it
    assert runner.unhealthy_since is not None
    assert "gpu missing: no device" in runner.unhealthy_reason


@contextmanager
def serving(settings: Settings, port: int) -> Iterator[None]:
    """The real app on a chosen port, so that a service can come back where it was."""
    from service.api.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(create_app(settings, migrate=False), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), what="uvicorn")
        yield
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_results_wait_in_the_spool_while_the_service_is_down(
    settings: Settings,
    engine: Engine,
    token: str,
    spool: Spool,
    make_agent: Callable,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (job_id,) = make_jobs(engine, 1)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    outage = serving(settings, port)
    outage.__enter__()
    run_ids: list[str] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        outage.__exit__(None, None, None)  # the service goes away while the job runs
        doc = result_for(claim)
        run_ids.append(doc["run_id"])
        return doc

    caplog.set_level(logging.INFO, logger="runner")
    with Running(make_agent(f"http://127.0.0.1:{port}", token, run_job)) as running:
        wait_for(lambda: caplog.text.count("trying again") >= 3, what="retries with backoff")
        assert [p.run_id for p in spool.pending()] == run_ids
        assert runs_stored(engine) == []
        with serving(settings, port):
            wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the result")
            wait_for(lambda: not spool.pending(), what="the spool to empty")
            running.stop()
    assert runs_stored(engine) == run_ids
    assert caplog.text.count(f"run {run_ids[0]} of job {job_id} posted") == 1
    assert f"http://127.0.0.1:{port}/api/v1/runs: no answer" in caplog.text


def test_a_result_left_in_the_spool_by_a_killed_agent_is_posted_at_start(
    server: LiveServer, engine: Engine, token: str, spool: Spool, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)
    with ServiceClient(server.url, token) as client:
        claim = client.claim()
    assert claim is not None
    left = spool.add(result_for(claim))  # the agent died after spooling, before posting

    def run_job(claim: dict, stop: threading.Event) -> dict:
        raise AssertionError("nothing else is queued")

    with Running(make_agent(server.url, token, run_job)):
        wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the spooled result")
    assert runs_stored(engine) == [left.run_id]
    assert spool.pending() == []


def test_a_result_whose_lease_is_gone_is_dropped_not_retried(
    server: LiveServer,
    engine: Engine,
    token: str,
    spool: Spool,
    make_agent: Callable,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (job_id,) = make_jobs(engine, 1)
    docs: list[dict] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        if not docs:  # the first attempt outlives its lease, and the reaper requeues the job
            expire_leases(engine)
            with Session(engine) as session, session.begin():
                queue.reap(session)
        docs.append(result_for(claim))
        return docs[-1]

    caplog.set_level(logging.INFO, logger="runner")
    with Running(make_agent(server.url, token, run_job)):
        wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the second attempt")
    late, current = (d["run_id"] for d in docs)
    assert runs_stored(engine) == [current]
    assert spool.pending() == []
    assert caplog.text.count(f"run {late} of job {job_id} dropped") == 1
    assert "409" in caplog.text
    (line,) = spool.discarded_log.read_text().splitlines()
    assert json.loads(line)["run_id"] == late
    assert json.loads(line)["job_id"] == job_id
    kept = list(spool.superseded_dir.glob("*.json"))  # kept on disk, never posted again
    assert [json.loads(p.read_text())["run_id"] for p in kept] == [late]


def test_an_invalid_result_goes_to_rejected_and_fails_the_job(
    server: LiveServer, engine: Engine, token: str, spool: Spool, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)

    def run_job(claim: dict, stop: threading.Event) -> dict:
        doc = result_for(claim)
        doc["workloads"][0]["timing"]["processes"][0]["samples"][3] = float("nan")
        return doc

    with Running(make_agent(server.url, token, run_job)):
        wait_for(lambda: job_row(engine, job_id).state == "failed", what="the job to fail")
    assert spool.pending() == []
    (rejected,) = spool.rejected()
    reason = rejected.with_suffix(".reason.txt").read_text()
    assert "422" in reason and "NaN" in reason
    assert "result document refused" in job_row(engine, job_id).failure
    assert runs_stored(engine) == []


def test_stop_while_idle_exits_at_once(
    server: LiveServer, engine: Engine, token: str, make_agent: Callable
) -> None:
    agent = make_agent(server.url, token, result_for, poll_interval=60)
    with Running(agent) as running:
        wait_for(lambda: runner_row(engine).last_seen_at, what="the registration")
        assert running.stop() < 2  # not the 60 s poll interval
    assert running.code == 0


def test_stop_during_a_job_releases_it_when_run_job_stops(
    server: LiveServer, engine: Engine, token: str, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)
    started = threading.Event()

    def run_job(claim: dict, stop: threading.Event) -> dict:
        started.set()
        if stop.wait(10):
            raise JobInterrupted()
        return result_for(claim)

    with Running(make_agent(server.url, token, run_job)) as running:
        assert started.wait(10)
        assert running.agent.current_job_id == job_id
        assert running.stop() < 2
    assert running.code == 0
    job = job_row(engine, job_id)
    assert (job.state, job.attempt, job.runner_id) == ("queued", 0, None)
    assert runs_stored(engine) == []


def test_a_second_stop_releases_at_once(
    server: LiveServer, engine: Engine, token: str, spool: Spool, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)
    started, finish, returned = threading.Event(), threading.Event(), threading.Event()

    def run_job(claim: dict, stop: threading.Event) -> dict:
        started.set()
        finish.wait(10)  # deaf to the stop event
        returned.set()
        return result_for(claim)

    with Running(make_agent(server.url, token, run_job)) as running:
        assert started.wait(10)
        running.agent.stop()
        assert running.stop() < 2  # the second stop
    assert job_row(engine, job_id).state == "queued"
    finish.set()
    assert returned.wait(5)
    time.sleep(0.2)
    assert runs_stored(engine) == []
    assert spool.pending() == []


def test_the_lease_is_extended_while_the_job_runs(
    server: LiveServer, engine: Engine, token: str, make_agent: Callable
) -> None:
    (job_id,) = make_jobs(engine, 1)
    leases: list[Any] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        leases.append(job_row(engine, job_id).lease_expires_at)
        leases.append(
            wait_for(
                lambda: (
                    (row := job_row(engine, job_id)).lease_expires_at > leases[0]
                    and row.lease_expires_at
                ),
                what="a lease extension",
            )
        )
        return result_for(claim)

    with Running(make_agent(server.url, token, run_job, lease_interval=0.1)):
        wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the job")
    assert leases[1] > leases[0]


def test_the_token_is_never_logged(
    server: LiveServer,
    engine: Engine,
    token: str,
    make_agent: Callable,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (job_id,) = make_jobs(engine, 2)[:1]
    caplog.set_level(logging.DEBUG)
    attempts: list[str] = []

    def run_job(claim: dict, stop: threading.Event) -> dict:
        attempts.append(claim["attempt_token"])
        if len(attempts) == 2:
            raise RuntimeError("boom")
        return result_for(claim)

    with Running(make_agent(server.url, token, run_job, lease_interval=0.05)):
        wait_for(lambda: job_row(engine, job_id).state == "succeeded", what="the job")
        wait_for(lambda: "boom" in caplog.text, what="the failure")
    wrong = "kwr_not-a-valid-token-0123456789"
    refused = make_agent(server.url, wrong, run_job)
    assert refused.run_forever() == 1
    assert f"{server.url}/api/v1/runners/register answered 401" in caplog.text
    for secret in (token, wrong, *attempts):
        assert secret not in caplog.text


def test_client_errors_say_retry_or_refused(server: LiveServer, token: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with ServiceClient(closed, token) as client, pytest.raises(ServiceUnavailable) as down:
        client.heartbeat()
    assert down.value.status is None and closed in str(down.value)
    with ServiceClient(server.url, token) as client, pytest.raises(ServiceRefused) as gone:
        client.release(999, "kwa_nope")
    assert gone.value.status == 404 and "no job 999" in str(gone.value)
    for status, kind in (
        (503, ServiceUnavailable),
        (429, ServiceUnavailable),
        (400, ServiceRefused),
    ):
        answer = httpx.MockTransport(lambda _r, s=status: httpx.Response(s, json={"detail": "x"}))
        expected = f"POST http://svc/api/v1/jobs/claim answered {status}"
        with (
            ServiceClient("http://svc", token, transport=answer) as client,
            pytest.raises(kind, match=expected),
        ):
            client.claim()
    with pytest.raises(ValueError):
        ServiceClient("ftp://svc", token)


AGENT_SCRIPT = """
import logging, os, sys
from runner.agent.loop import run_agent
from runner.run.pipeline import JobInterrupted

def run_job(claim, stop):
    if stop.wait(30):
        raise JobInterrupted()
    raise RuntimeError("was not stopped")

logging.basicConfig(level=logging.INFO)
sys.exit(run_agent(sys.argv[1], os.environ["KW_TOKEN"], run_job, spool_dir=sys.argv[2],
                   host="subprocess-host", poll_interval=0.05))
"""


def test_the_agent_process_stops_on_sigterm_and_releases_its_job(
    server: LiveServer, engine: Engine, token: str, tmp_path: Path
) -> None:
    (job_id,) = make_jobs(engine, 1)
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT_SCRIPT))
    env = {**os.environ, "KW_TOKEN": token, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script), server.url, str(tmp_path / "spool")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: job_row(engine, job_id).state == "running", what="the claim")
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    assert "received SIGTERM" in output and f"released job {job_id}" in output
    assert token not in output
    job = job_row(engine, job_id)
    assert (job.state, job.attempt) == ("queued", 0)


def test_sigterm_and_sigint_stop_the_agent_only_while_it_runs(spool: Spool) -> None:
    """The handlers it installed go once it is done: the process's own are back."""
    with ServiceClient("http://127.0.0.1:9", "kwr_unused") as client:
        agent = Agent(client, result_for, spool=spool, labels={}, environment={}, host="h")
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        with stop_on_signals(agent):
            os.kill(os.getpid(), signal.SIGINT)
            wait_for(lambda: agent.stopping, what="the stop")
        assert {sig: signal.getsignal(sig) for sig in before} == before


def test_off_the_main_thread_no_signal_handler_is_touched(spool: Spool) -> None:
    """Python lets only the main thread set one; an agent run in a thread is stopped by hand."""
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def in_a_thread() -> None:
        with ServiceClient("http://127.0.0.1:9", "kwr_unused") as client:
            agent = Agent(client, result_for, spool=spool, labels={}, environment={}, host="h")
            with stop_on_signals(agent):
                seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join(10)
    assert seen == [before]

"""The agent's start against the real service: without a usable GPU it serves nothing unless
told that it serves CPU suites (--cpu, $KERNELWATCH_RUNNER_CPU).

Refused, it says so in one line and exits with EXIT_CONFIG (the systemd units do not restart on
it) before the service hears of it; with --cpu it registers, claims and posts as before, and a
CPU agent handed a CUDA suite's job stops with EXIT_CONFIG too, rather than take the next one.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from runner import cli
from runner.agent import job as agent_job
from runner.agent import loop
from runner.agent.exits import EXIT_CONFIG, EXIT_OK
from runner.host import checks as host
from tests.live_server import LiveServer
from tests.runner.agent.test_loop import RUNNER, job_row, result_for, runner_row, runs_stored
from tests.runner.host.test_checks import H100
from tests.service.store.jobs.test_queue import make_jobs, make_runner

ROOT = Path(__file__).resolve().parents[3]
# What `probe_gpu` answers where there is no GPU to use: no CuPy, no driver, none visible.
NO_GPU = [
    {"missing": "ModuleNotFoundError: No module named 'cupy'"},
    {"wrong": "CUDARuntimeError: cudaErrorNoDevice:\nno CUDA-capable device is detected"},
    {**H100, "count": 0},
]


@pytest.fixture
def agent_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`agent`'s folders under tmp_path; no $KERNELWATCH_RUNNER_CPU from the caller."""
    monkeypatch.delenv(cli.CPU_ENV, raising=False)
    httpx_log = logging.getLogger("httpx")
    monkeypatch.setattr(httpx_log, "level", httpx_log.level)  # the agent quietens it
    return ["--cache", str(tmp_path / "cache"), "--spool", str(tmp_path / "spool")]


@pytest.fixture
def watchdog() -> Iterator[None]:
    """An agent in this process that does not stop on its own gets SIGTERM after 60 s, as
    systemd would stop it: the test fails rather than hang."""
    timer = threading.Timer(60, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    yield
    timer.cancel()


def untouched(engine: Engine, job_id: int) -> None:
    """The service never heard of the agent: no registration, heartbeat or health report (each
    sets last_seen_at), and its job was never claimed."""
    runner = runner_row(engine)
    assert (runner.host, runner.last_seen_at, runner.unhealthy_since) == ("", None, None)
    job = job_row(engine, job_id)
    assert (job.state, job.attempt, job.runner_id) == ("queued", 0, None)


@pytest.fixture
def gpu_job(engine: Engine) -> tuple[str, int]:
    """(token, job id) of a runner labelled gpu=h100 and one job that asks for it."""
    token = make_runner(engine, RUNNER, {"gpu": "h100"})
    (job_id,) = make_jobs(engine, 1, {"gpu": "h100"})
    return token, job_id


def test_without_a_gpu_the_agent_refuses_in_one_line_and_the_service_never_hears_of_it(
    server: LiveServer,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_args: list[str],
    gpu_job: tuple[str, int],
) -> None:
    token, job_id = gpu_job

    def started(*args: object, **kwargs: object) -> int:
        raise AssertionError("the agent started on a host without a GPU")

    monkeypatch.setattr(loop, "run_agent", started)
    for probe in NO_GPU:
        monkeypatch.setattr(host, "probe_gpu", lambda probe=probe: probe)
        code = cli.main(["agent", "--server", server.url, "--token", token, *agent_args])
        out, err = capsys.readouterr()
        assert code == EXIT_CONFIG, probe
        assert out == "" and len(err.splitlines()) == 1, err
        assert err.startswith("kernelwatch-runner agent: error: no usable GPU for CUDA suites (")
        missing = host.gpu_problem(probe)  # what doctor says is missing, with its fix
        assert missing is not None and f"({missing.name} {missing.state}: " in err
        assert missing.fix in err
        assert "or pass --cpu ($KERNELWATCH_RUNNER_CPU=1) if this host serves CPU suites" in err
    untouched(engine, job_id)


def test_the_agent_process_on_this_gpu_less_machine_exits_78_untold(
    server: LiveServer, engine: Engine, agent_args: list[str], gpu_job: tuple[str, int]
) -> None:
    """As systemd starts it, with the real GPU probe: nothing stubbed."""
    if host.gpu_problem(host.probe_gpu()) is None:
        pytest.skip("this machine has a GPU the agent can use")
    token, job_id = gpu_job
    env = {k: v for k, v in os.environ.items() if k != cli.CPU_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "runner.cli", "agent", "--server", server.url, "--token", token,
         *agent_args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=30,
    )  # fmt: skip
    assert done.returncode == EXIT_CONFIG == 78, done.stderr
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "--cpu" in done.stderr and "Traceback" not in done.stderr
    untouched(engine, job_id)


@pytest.mark.usefixtures("watchdog")
@pytest.mark.parametrize("told", ["--cpu", cli.CPU_ENV])
def test_told_it_serves_cpu_suites_the_agent_registers_claims_and_posts_as_before(
    server: LiveServer,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    agent_args: list[str],
    told: str,
) -> None:
    token = make_runner(engine, RUNNER)
    (job_id,) = make_jobs(engine, 1)
    flags = [told] if told == "--cpu" else []
    if not flags:
        monkeypatch.setenv(cli.CPU_ENV, "1")

    def probed() -> dict:
        raise AssertionError("a CPU agent looked for a GPU")

    def run_job(claim: dict, stop: threading.Event) -> dict:
        os.kill(os.getpid(), signal.SIGTERM)  # as systemd stops it: this job is finished first
        return result_for(claim)

    monkeypatch.setattr(host, "probe_gpu", probed)
    monkeypatch.setattr(agent_job, "make_run_job", lambda *args, **kwargs: run_job)
    code = cli.main(["agent", *flags, "--server", server.url, "--token", token, *agent_args])
    assert code == EXIT_OK
    assert job_row(engine, job_id).state == "succeeded" and len(runs_stored(engine)) == 1
    runner = runner_row(engine)
    assert runner.environment["gpu"]["name"].startswith("CPU: ") and runner.unhealthy_since is None


@pytest.mark.usefixtures("watchdog")
def test_a_cpu_agent_handed_a_cuda_suite_hands_it_back_and_stays_down(
    server: LiveServer,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent_args: list[str],
    gpu_job: tuple[str, int],
) -> None:
    """Exit 3 would have systemd start it again, to claim the next CUDA job the same way."""
    token, job_id = gpu_job

    def run_job(claim: dict, stop: threading.Event) -> dict:
        host.require_gpu("kernels", gpu=lambda: NO_GPU[0])  # as the pipeline's CUDA suites do
        raise AssertionError("require_gpu passed without a GPU")

    monkeypatch.setattr(agent_job, "make_run_job", lambda *args, **kwargs: run_job)
    code = cli.main(["agent", "--cpu", "--server", server.url, "--token", token, *agent_args])
    assert code == EXIT_CONFIG
    last = capsys.readouterr().err.splitlines()[-1]
    assert "this agent serves CPU suites (--cpu)" in last and "CUDA suite's job" in last
    job = job_row(engine, job_id)
    assert (job.state, job.attempt, job.runner_id) == ("queued", 0, None)  # back, unfailed
    runner = runner_row(engine)
    assert runner.unhealthy_since is not None
    assert "cannot run the CUDA suite 'kernels'" in runner.unhealthy_reason

"""The agent's log of a job: which job, which stage, and how long each stage took."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from runner.agent.job import LogProgress
from runner.measure.phase import Outcome


def test_each_stage_line_names_the_job_and_the_time_of_the_stage_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = iter([10.0, 14.5, 60.25, 61.0])
    progress = LogProgress(42, clock=lambda: next(ticks))
    with caplog.at_level(logging.INFO, logger="runner.job"):
        progress.stage("build")
        progress.stage("timing", 38)
        progress.advance("gemm[m=1024]", Outcome("timeout"))
        progress.log("ncu: 38 ok")
        progress.stage("ncu")
        progress.finished()
        progress.finished()  # nothing left to time
    assert caplog.messages == [
        "job 42: stage build",
        "job 42: stage timing (38 workloads) (build took 4.5 s)",
        "job 42: gemm[m=1024]: timeout",
        "job 42: ncu: 38 ok",
        "job 42: stage ncu (timing took 45.8 s)",
        "job 42: ncu took 0.8 s",
    ]


def run_a_job(monkeypatch: pytest.MonkeyPatch, console: object) -> dict:
    import threading

    from runner.agent import job as jobrun

    def execute(request: object, progress: jobrun.Progress) -> dict:
        progress.stage("build")
        progress.advance("stream.cu")
        progress.stage("timing", 2)
        progress.advance("gemm[m=1024]")
        progress.advance("gemm[m=4096]", Outcome("timeout"))
        return {"status": "succeeded"}

    monkeypatch.setattr(jobrun, "execute", execute)
    claim = {"job": {"id": 7, "kind": "run", "commit": "a" * 40, "branch": "main",
                     "repository": "acme/kernels"}, "clone_url": "/srv/acme.git",
             "attempt_token": "t"}  # fmt: skip
    run_job = jobrun.make_run_job(Path("/nonexistent"), console=console)
    return run_job(claim, threading.Event())


def test_on_a_terminal_a_job_shows_progress_bars_and_still_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from rich.console import Console

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    with caplog.at_level(logging.INFO, logger="runner.job"):
        assert run_a_job(monkeypatch, terminal) == {"status": "succeeded"}
    drawn = screen.getvalue()
    assert "timing" in drawn and "2/2" in drawn and "━" in drawn  # the stage's bar, filled
    assert "gemm[m=4096] (timeout)" in drawn
    assert "job 7: stage timing (2 workloads) (build took" in " ".join(caplog.messages)
    assert "job 7: gemm[m=4096]: timeout" in caplog.messages

    piped = io.StringIO()
    assert run_a_job(monkeypatch, Console(file=piped, force_terminal=False)) == {
        "status": "succeeded"
    }
    assert piped.getvalue() == ""  # no terminal: the log lines alone

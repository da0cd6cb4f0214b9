"""The agent's log of a job: which job, which stage, and how long each stage took."""

from __future__ import annotations

import logging

import pytest

from runner.jobrun import LogProgress
from runner.measure import Outcome


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

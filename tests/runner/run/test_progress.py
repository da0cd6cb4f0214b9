"""runner.run.progress: what a run reports as it goes (its stages, each workload done, its log
lines). The base `Progress` is the run's default when nobody watches: it accepts every report
and says nothing; the CLI's bars (runner.run.console) and the agent's log lines
(runner.agent.job) receive the same three calls with the same arguments."""

from __future__ import annotations

import inspect
import logging

import pytest

from runner.agent.job import LogProgress, TeeProgress
from runner.measure.phase import Outcome
from runner.run import pipeline
from runner.run.console import RichProgress
from runner.run.progress import Progress

CALLS = ("stage", "advance", "log")


def test_the_default_progress_takes_every_report_and_says_nothing(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    progress = Progress()
    assert progress.stage("build") is None
    assert progress.stage("timing 1/3", 12) is None
    assert progress.advance("gemm[m=4096]") is None
    assert progress.advance("gemm[m=4096]", Outcome("crashed", error="worker died")) is None
    assert progress.log("correctness: references kept for 2 of 2") is None
    assert capsys.readouterr() == ("", "")
    assert caplog.records == []


def test_a_run_without_a_progress_of_its_own_falls_back_on_this_one() -> None:
    assert pipeline.Progress is Progress


@pytest.mark.parametrize("kind", [RichProgress, LogProgress, TeeProgress])
def test_every_progress_a_run_may_be_given_takes_the_same_arguments(kind: type) -> None:
    assert issubclass(kind, Progress)
    for name in CALLS:
        ours = inspect.signature(getattr(Progress, name))
        theirs = inspect.signature(getattr(kind, name))
        assert list(theirs.parameters) == list(ours.parameters), (kind, name)
        defaults = [p.default for p in theirs.parameters.values()]
        assert defaults == [p.default for p in ours.parameters.values()], (kind, name)

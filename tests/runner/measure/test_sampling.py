"""Where the timing processes draw a workload's inputs (CPU only)."""

from __future__ import annotations

import dataclasses

import pytest

from runner.measure.phase import WARM_ENV
from runner.measure.sampling import INPUTS_ENV, prepare, timing_inputs
from runner.run import pipeline, timing_passes
from runner.suite.load import load_suite
from tests.runner.gitrepo import CPU_SUITE


class TakesInputs:
    def prepare(self, seed: int = 0, library=None, *, inputs: str = "host"):
        return ("prepared", seed, inputs)


class Plain:
    def prepare(self, seed: int = 0):
        return ("prepared", seed)


def test_the_keyword_goes_only_to_workloads_that_take_it() -> None:
    assert prepare(TakesInputs(), 2, "device") == ("prepared", 2, "device")
    assert prepare(TakesInputs(), 2, None) == ("prepared", 2, "host")
    assert prepare(Plain(), 1, "device") == ("prepared", 1)


def test_gpu_timing_draws_on_the_device_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(INPUTS_ENV, raising=False)
    assert timing_inputs("cuda") == "device" and timing_inputs("cpu") is None
    monkeypatch.setenv(INPUTS_ENV, "host")
    assert timing_inputs("cuda") == "host"


def test_check_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = load_suite(CPU_SUITE)
    gpu = dataclasses.replace(cpu, device="cuda")
    monkeypatch.delenv(pipeline.CHECK_PROCESSES_ENV, raising=False)
    assert pipeline.check_processes(cpu) == 1
    from runner.host import gpuinfo

    monkeypatch.setattr(gpuinfo, "compute_mode", lambda: 0)
    assert pipeline.check_processes(gpu) == pipeline.CHECK_PROCESSES
    monkeypatch.setattr(gpuinfo, "compute_mode", lambda: 3)  # exclusive process
    assert pipeline.check_processes(gpu) == 1
    monkeypatch.setenv(pipeline.CHECK_PROCESSES_ENV, "2")
    assert pipeline.check_processes(cpu) == 2


def test_warm_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = load_suite(CPU_SUITE)
    gpu = dataclasses.replace(cpu, device="cuda")
    for name in (pipeline.CHECK_PROCESSES_ENV, timing_passes.SHORT_PROCESSES_ENV, WARM_ENV):
        monkeypatch.delenv(name, raising=False)
    assert pipeline.warm_plan(cpu) == [("check", 0), ("time", 0), ("time", 1), ("time", 2)]
    from runner.host import gpuinfo

    monkeypatch.setattr(gpuinfo, "compute_mode", lambda: 0)
    plan = pipeline.warm_plan(gpu)
    assert plan == [("check", 0)] * 3 + [("time", p) for p in range(6)]  # short launches' too
    monkeypatch.setattr(gpuinfo, "compute_mode", lambda: 3)  # one process at a time
    assert pipeline.warm_plan(gpu) == []
    monkeypatch.setenv(WARM_ENV, "0")
    assert pipeline.warm_plan(cpu) == []

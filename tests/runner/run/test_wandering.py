"""Launches whose timing processes sit apart, timed again apart from the rest of the suite
(runner.run.wandering, CPU only): which launches, how many processes, what the document then
holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runner.measure.phase import Outcome
from runner.run import doubtful, pipeline, timing_passes, wandering
from runner.run.pipeline import RunRequest, execute
from runner.run.report import WorkloadRecord
from runner.run.wandering import (
    WANDER_NOTE,
    WANDER_PROCESSES_ENV,
    process_spread,
    timed_apart,
    wander_processes,
    wandering_launches,
)
from service.schemas.document import RunDocument
from tests.runner.gitrepo import cpu_suite_repo


def ok(median: float, method: str = "cuda_events") -> Outcome:
    return Outcome("ok", result={"samples": [median * 0.999, median, median * 1.001],
                                 "stop_reason": "relative spread 0.1% <= 0.5%",
                                 "method": method})  # fmt: skip


def record(wid: str, *timings: Outcome) -> WorkloadRecord:
    return WorkloadRecord(info={"id": wid}, timings=list(timings))


def test_by_default_a_wandering_launch_is_timed_apart_in_twice_the_suites_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(WANDER_PROCESSES_ENV, raising=False)
    assert (wander_processes(3), wander_processes(1)) == (6, 2)
    for value, total in (("12", 12), ("2", 3), ("x", 6)):
        monkeypatch.setenv(WANDER_PROCESSES_ENV, value)
        assert wander_processes(3) == total


def test_the_launches_whose_processes_sat_more_than_half_a_percent_apart() -> None:
    """The H200's spilling SGEMM (4,172 / 4,339 / 4,499 us: 3.8% sd) is one, and so are three
    processes 0.9% apart; processes within 0.3% are not, nor a launch that one process alone
    timed, a short launch (its extra processes are its own) or one timed on the host."""
    records = [
        record("spill", ok(4339), ok(4499), ok(4172)),
        record("all low", ok(4280), ok(4274), ok(4211)),
        record("steady", ok(652.5), ok(653.2), ok(653.9)),
        record("one timed it", ok(100), Outcome("timeout", error="killed"), Outcome("crashed")),
        record("short", ok(3.4), ok(3.6), ok(3.5)),
        record("edge", ok(100), ok(100.6), ok(100.3)),  # 0.3% sd
        record("host", ok(100, "host"), ok(110, "host"), ok(90, "host")),  # a CPU suite's
    ]
    found = wandering_launches(records, short=["short"])
    assert list(found) == ["spill", "all low"]
    assert found["spill"] == pytest.approx(0.0377, abs=1e-3)
    assert process_spread([ok(100), Outcome("crashed")]) is None


def test_the_processes_that_timed_it_apart_are_its_timing_where_enough_succeeded() -> None:
    first = [ok(4172.0), ok(4339.0), ok(4499.0)]
    again = [ok(4400.0), ok(4398.0), Outcome("timeout", error="killed")]
    kept = timed_apart(first, again, 0.038)
    assert kept == again and kept[0].result is not None
    note = WANDER_NOTE.format(total=3, first=3, spread=0.038)
    assert kept[0].result["stop_reason"] == f"{note}: relative spread 0.1% <= 0.5%"
    assert "its 3 processes among them sat 3.8% apart and are left out" in note
    one = [ok(4400.0), Outcome("crashed")]  # one of its own is not enough: every process kept
    assert timed_apart(first, one, 0.038) == [*first, *one]


def test_a_launch_whose_processes_sit_apart_is_timed_again_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU suite with a workload that each timing process runs 5% slower than the last
    (its seed), and a steady one: the first alone is timed again in 6 fresh processes, seeds
    going on from those the suite's processes and short launches may use, and those 6 are its
    timing.processes; the steady one keeps the suite's 3."""
    monkeypatch.setenv("KW_FIXTURE_MISBEHAVE", "wander")
    monkeypatch.delenv(WANDER_PROCESSES_ENV, raising=False)
    real = pipeline.run_phase
    timed: list[tuple[int, list[str]]] = []

    def run_phase(suite: Any, mode: str, ids: list[str], **kw: Any) -> Any:
        phase = real(suite, mode, ids, **kw)
        if mode == "time":
            timed.append((kw["seed"], list(ids)))
            for wid, outcome in phase.outcomes.items():
                if outcome.result:  # as a GPU timer reports a long launch
                    outcome.result.update(method="cuda_events", placements=1)
                if outcome.result and "n=256" in wid:  # a steady one, whatever the host did
                    outcome.result["samples"] = [1.0, 1.0, 1.0]
        return phase

    monkeypatch.setattr(pipeline, "run_phase", run_phase)
    monkeypatch.setattr(timing_passes, "run_phase", run_phase)
    monkeypatch.setattr(doubtful, "run_phase", run_phase)
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    doc = execute(
        RunRequest(source=str(repo), rev=first, only="wander|n=256", cache_dir=tmp_path / "c")
    )
    RunDocument.model_validate(doc)
    assert doc["status"] == "succeeded"
    by_name = {w["name"]: w["timing"] for w in doc["workloads"]}
    timing = by_name["wander"]
    assert len(timing["processes"]) == wandering.WANDER_PROCESSES_FACTOR * 3 == 6
    assert len(by_name["fma"]["processes"]) == 3
    steady, wandered = sorted(timed[0][1], key=lambda w: "wander" in w)
    assert timed == [(0, [steady, wandered]), (1, [steady, wandered]), (2, [steady, wandered])] + [
        (seed, [wandered]) for seed in range(6, 12)
    ]  # fmt: skip
    assert (
        "timed apart from the suite's other workloads in a fresh process, 6 in all"
        in (timing["stop_reason"])
    )
    medians = [float(np.median(p["samples"])) for p in timing["processes"]]
    assert max(medians) / min(medians) > 1.08  # the seeds' 0%, 5%, 10% came through
    assert "1 launches whose processes sat apart" in doc["log_tail"]

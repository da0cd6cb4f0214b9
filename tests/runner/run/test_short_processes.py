"""Short launches timed in more processes than the suite's (runner.run.timing_passes, CPU
only): which workloads, how many processes, what the document then holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runner.measure import spent
from runner.measure.phase import Outcome
from runner.run import pipeline, timing_passes
from runner.run.pipeline import RunRequest, execute
from runner.run.report import WorkloadRecord
from runner.run.timing_passes import (
    SHORT_NOTE,
    SHORT_PROCESSES_ENV,
    mark_short,
    short_launches,
    short_processes,
)
from runner.suite.load import Suite, Timing
from service.schemas.document import RunDocument
from tests.runner.gitrepo import cpu_suite_repo


def suite(processes: int = 3) -> Suite:
    return Suite(root=Path("."), name="s", workloads="m", timing=Timing(processes=processes))


def ok(placements: int | None, method: str = "cuda_events") -> Outcome:
    result: dict[str, Any] = {"samples": [1.0], "stop_reason": "relative spread 0.1% <= 0.5%"}
    result["method"] = method
    if placements is not None:
        result["placements"] = placements
    return Outcome("ok", result=result)


def record(wid: str, *timings: Outcome) -> WorkloadRecord:
    return WorkloadRecord(info={"id": wid}, timings=list(timings))


def test_by_default_a_short_launch_gets_twice_the_suites_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SHORT_PROCESSES_ENV, raising=False)
    assert short_processes(suite(3)) == 6
    assert short_processes(suite(1)) == 2


@pytest.mark.parametrize(("value", "total"), [("9", 9), ("3", 3), ("1", 3), ("0", 3), ("x", 6)])
def test_the_setting_gives_the_total_never_below_the_suites(
    monkeypatch: pytest.MonkeyPatch, value: str, total: int
) -> None:
    monkeypatch.setenv(SHORT_PROCESSES_ENV, value)
    assert short_processes(suite(3)) == total


def test_short_launches_are_those_every_process_sampled_on_placements() -> None:
    records = [
        record("short", ok(6), ok(6), ok(6)),
        record("long", ok(1), ok(1), ok(1)),
        record("capped once", ok(6), ok(1), ok(6)),  # power-capped in one process: paced, dear
        record("one failed", ok(6), Outcome("timeout", error="killed"), ok(6)),
        record("all failed", Outcome("crashed"), Outcome("error")),
        record("host timing", ok(None), ok(None)),  # no placements key: one placement
        record("ran out of memory", ok(2), ok(6), ok(3)),
        record("cupti", ok(6, "cupti"), ok(6, "cupti"), ok(6, "cupti")),  # process offsets too
        record("host", ok(6, "host"), ok(6, "host"), ok(6, "host")),
    ]
    assert short_launches(records) == ["short", "one failed", "ran out of memory", "cupti"]


def test_an_extra_process_says_what_it_was() -> None:
    marked = mark_short(ok(6), 6)
    assert marked.result is not None
    assert marked.result["stop_reason"] == (
        f"{SHORT_NOTE.format(total=6)}: relative spread 0.1% <= 0.5%"
    )
    failed = Outcome("timeout", error="killed")
    assert mark_short(failed, 6) is failed and failed.error == "killed"


def test_the_cpu_suite_has_no_short_launches(tmp_path: Path) -> None:
    """Host timing samples on one placement: no process beyond the suite's 3."""
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    doc = execute(RunRequest(source=str(repo), rev=first, only="n=256", cache_dir=tmp_path / "c"))
    assert [len(w["timing"]["processes"]) for w in doc["workloads"]] == [3]
    assert SHORT_NOTE.split("(")[0] not in doc["workloads"][0]["timing"]["stop_reason"]


class Stages(pipeline.Progress):
    def __init__(self) -> None:
        self.names: list[str] = []

    def stage(self, name: str, total: int | None = None) -> None:
        self.names.append(name)


def test_a_short_launch_is_timed_in_the_extra_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CPU suite with one workload that the timing processes report as sampled on
    placements (as a short GPU launch is): it alone is timed in 3 more processes, each a
    further entry of its timing.processes, and the median is that of all the samples."""
    monkeypatch.setenv(SHORT_PROCESSES_ENV, "6")
    real = timing_passes.run_phase
    timed: list[tuple[int, list[str]]] = []

    def run_phase(suite: Suite, mode: str, ids: list[str], **kw: Any) -> Any:
        phase = real(suite, mode, ids, **kw)
        if mode == "time":
            timed.append((kw["seed"], list(ids)))
            for wid, outcome in phase.outcomes.items():
                if "n=256" in wid and outcome.result:  # as the events timer reports a short one
                    outcome.result.update(placements=6, method="cuda_events")
        return phase

    monkeypatch.setattr(timing_passes, "run_phase", run_phase)
    monkeypatch.setattr(spent, "SAY_FROM", 0.0)  # the CPU's processes take under a second
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    stages = Stages()
    doc = execute(RunRequest(source=str(repo), rev=first, cache_dir=tmp_path / "c"), stages)
    RunDocument.model_validate(doc)
    assert doc["status"] == "succeeded"
    both = sorted(timed[0][1])
    assert len(both) == 2 and timed[:3] == [(0, both), (1, both), (2, both)]
    short = [wid for wid in both if "n=256" in wid]
    assert timed[3:] == [(3, short), (4, short), (5, short)]  # seeds go on from the suite's
    after = stages.names[stages.names.index("timing 3/3") + 1 :]
    assert after == ["timing 4/6 (short)", "timing 5/6 (short)", "timing 6/6 (short)"]
    by_n = {w["params"]["n"]: w["timing"] for w in doc["workloads"]}
    assert len(by_n[256]["processes"]) == 6 and len(by_n[512]["processes"]) == 3
    # Each process says its kind: a prepare time compares only with one of its kind.
    assert [p["process"] for p in by_n[256]["processes"]] == ["suite"] * 3 + ["short"] * 3
    assert [p["process"] for p in by_n[512]["processes"]] == ["suite"] * 3
    assert SHORT_NOTE.format(total=6) in by_n[256]["stop_reason"]
    assert SHORT_NOTE.split("(")[0] not in by_n[512]["stop_reason"]
    samples = np.concatenate([p["samples"] for p in by_n[256]["processes"]])
    assert by_n[256]["median"] == pytest.approx(float(np.median(samples)))
    assert by_n[256]["n"] == samples.size
    assert "1 short launches (sampled on placements in every process)" in doc["log_tail"]
    # and where each extra process's seconds went, as the suite's processes' (runner.measure.spent)
    assert (
        "] timing 4/6 (short): " in doc["log_tail"] and "] timing 6/6 (short): " in doc["log_tail"]
    )


def test_no_extra_processes_when_the_setting_says_the_suites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHORT_PROCESSES_ENV, "3")
    real = timing_passes.run_phase

    def run_phase(suite: Suite, mode: str, ids: list[str], **kw: Any) -> Any:
        phase = real(suite, mode, ids, **kw)
        for outcome in phase.outcomes.values() if mode == "time" else ():
            if outcome.result:
                outcome.result.update(placements=6, method="cuda_events")
        return phase

    monkeypatch.setattr(timing_passes, "run_phase", run_phase)
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    doc = execute(RunRequest(source=str(repo), rev=first, only="n=256", cache_dir=tmp_path / "c"))
    assert [len(w["timing"]["processes"]) for w in doc["workloads"]] == [3]


def test_cupti_timed_workloads_are_timed_first_in_each_process() -> None:
    infos = {
        "long": {"timing_method": "cuda_events"},
        "tiny": {"timing_method": "cupti"},
        "mid": {},  # the suite's default
        "tiny2": {"timing_method": "cupti"},
    }
    ids = ["long", "tiny", "mid", "tiny2"]
    assert timing_passes.timing_order(ids, infos, "") == ["tiny", "tiny2", "long", "mid"]
    assert timing_passes.timing_order(ids, infos, "cupti") == ["tiny", "mid", "tiny2", "long"]
    assert timing_passes.timing_order(["long", "mid"], infos, "") == ["long", "mid"]

"""Doubtful launches timed against their base within the run (runner.run.paired, CPU only):
which base, which launches, the interleaving, and what the document then holds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runner.measure.phase import Outcome, WarmWorkers, run_phase
from runner.run import doubtful, paired, pipeline, timing_passes
from runner.run.paired import APART_WHY, MIN_PAIRS, PAIR_ENV, base_revision, paired_timing
from runner.run.pipeline import RunRequest, execute
from runner.run.progress import Progress
from runner.run.report import WorkloadRecord
from runner.run.wandering import WANDER_PROCESSES_ENV
from runner.suite.checkout import Checkouts, CommitInfo
from runner.suite.load import load_suite
from service.schemas.document import RunDocument
from tests.runner.gitrepo import commit_all, cpu_suite_repo


def commit(parents: list[str]) -> CommitInfo:
    return CommitInfo("h" * 40, parents, "a", "a@b", "m", datetime.now(UTC), parents)


def ok(median: float) -> Outcome:
    return Outcome("ok", result={"samples": [median], "stop_reason": "enough", "method": "cupti"})


def test_the_base_is_the_first_parent_or_a_pull_requests_merge_base() -> None:
    assert base_revision(commit(["p1", "p2"]), None) == "p1"
    assert base_revision(commit([]), None) is None  # a root commit has none
    assert base_revision(commit(["p1"]), {"merge_base": "m" * 40}) == "m" * 40
    assert base_revision(commit(["p1"]), {"merge_base": None}) is None  # unknown: no guess


def test_pairs_are_its_timing_only_where_both_sides_have_enough() -> None:
    first = [ok(100.0), ok(104.0), ok(100.1)]
    head = [ok(101.0), ok(101.2), Outcome("crashed")]
    base = [ok(100.0), ok(100.1), ok(100.2)]
    why = APART_WHY.format(first=len(first), spread=0.02)
    found = paired_timing(head, base, why, "b" * 40)
    assert found is not None and found == (head, base)
    assert head[0].result is not None and head[0].result["stop_reason"].startswith(
        f"timed interleaved with base {'b' * 12} (A B A B) in 3 fresh processes of each side "
        "(its 3 processes among the suite's other workloads sat 2.0% apart and are left out)"
    )
    assert MIN_PAIRS == 2
    assert paired_timing(head, [ok(1.0), Outcome("crashed")], why, "b" * 40) is None


def _gpu_like(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, list[str]]]:
    """Every time phase's outcomes as a GPU timer reports a long launch (the CPU suite's are
    host-timed, which no launch is timed again for), the steady workload steady whatever the
    host did; each phase as (tree, seed, ids)."""
    timed: list[tuple[str, int, list[str]]] = []
    real = pipeline.run_phase

    def run_phase(suite: Any, mode: str, ids: list[str], **kw: Any) -> Any:
        phase = real(suite, mode, ids, **kw)
        if mode == "time":
            timed.append((suite.root.name, kw["seed"], list(ids)))
            for wid, outcome in phase.outcomes.items():
                if outcome.result:
                    outcome.result.update(method="cuda_events", placements=1)
                if outcome.result and "n=256" in wid:
                    outcome.result["samples"] = [1.0, 1.0, 1.0]
        return phase

    monkeypatch.setattr(pipeline, "run_phase", run_phase)
    monkeypatch.setattr(timing_passes, "run_phase", run_phase)
    monkeypatch.setattr(doubtful, "run_phase", run_phase)
    monkeypatch.setattr(paired, "run_phase", run_phase)
    monkeypatch.setenv("KW_FIXTURE_MISBEHAVE", "wander")
    monkeypatch.delenv(WANDER_PROCESSES_ENV, raising=False)
    return timed


def test_a_doubtful_launch_is_timed_interleaved_with_the_parent_and_the_base_rides_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the second commit, the launch whose processes sat apart (25% a seed) is timed in 3
    process pairs, base then head, the same seed on both sides, going on from the seeds the
    suite's processes may use; those 3 head processes are its timing, and the document carries
    the parent's 3 as `paired_base`, which the service's schema takes."""
    timed = _gpu_like(monkeypatch)
    monkeypatch.setenv("KW_FIXTURE_WANDER_STEP", "0.25")  # levels 0, 25%, 50% a seed
    repo, first, second = cpu_suite_repo(tmp_path / "repo")
    doc = execute(
        RunRequest(source=str(repo), rev=second, only="wander|n=256", cache_dir=tmp_path / "c")
    )
    RunDocument.model_validate(doc)
    head_tree = timed[0][0]
    wander = next(w for w in timed[0][2] if "wander" in w)
    after = [(tree == head_tree, seed, ids) for tree, seed, ids in timed[3:]]
    assert after == [(side, seed, [wander]) for seed in (6, 7, 8) for side in (False, True)], (
        timed
    )  # base first, then head, for each seed
    by_name = {w["name"]: w["timing"] for w in doc["workloads"]}
    assert len(by_name["wander"]["processes"]) == 3 and len(by_name["fma"]["processes"]) == 3
    assert by_name["wander"]["stop_reason"].startswith(f"timed interleaved with base {first[:12]}")
    base = doc["paired_base"]
    assert base["commit"]["sha"] == first and base["suite"] == doc["suite"]
    assert [w["name"] for w in base["workloads"]] == ["wander"]
    kinds = [p["process"] for t in (by_name["wander"], base["workloads"][0]["timing"])
             for p in t["processes"]]  # fmt: skip
    assert kinds == ["paired"] * 6 and {p["process"] for p in by_name["fma"]["processes"]} == {
        "suite"
    }
    head_levels = [float(np.median(p["samples"])) for p in by_name["wander"]["processes"]]
    base_levels = [float(np.median(p["samples"])) for p in base["workloads"][0]["timing"][
        "processes"]]  # fmt: skip
    # Each pair shares its seed's level: the sides sit together, pair by pair (a pair of two
    # seeds would sit 20% apart or more; a busy host's sleep overshoots by a few %).
    for h, b in zip(head_levels, base_levels, strict=True):
        assert abs(h / b - 1) < 0.1, (head_levels, base_levels)
    assert "timed interleaved with base" in doc["log_tail"]
    assert not any(p.name.startswith("base-") for p in (tmp_path / "c" / "worktrees").iterdir())


def test_without_a_base_or_with_pairing_off_the_head_is_timed_apart_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timed = _gpu_like(monkeypatch)
    repo, first, second = cpu_suite_repo(tmp_path / "repo")
    for rev, env in ((first, "1"), (second, "0")):  # a root commit; $KERNELWATCH_PAIR_BASE=0
        monkeypatch.setenv(PAIR_ENV, env)
        timed.clear()
        doc = execute(
            RunRequest(source=str(repo), rev=rev, only="wander|n=256", cache_dir=tmp_path / "c")
        )
        assert "paired_base" not in doc
        assert len({tree for tree, _, _ in timed}) == 1  # no base was timed
        wander = next(w["timing"] for w in doc["workloads"] if w["name"] == "wander")
        assert len(wander["processes"]) == 6, rev
        assert {p["process"] for p in wander["processes"]} == {"alone"}  # its 6 apart replace 3


def test_a_base_whose_suite_cannot_load_leaves_the_head_timed_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's suite file is broken: the log says the base could not be prepared and the
    launch is timed apart on the head alone, nothing lost."""
    _gpu_like(monkeypatch)
    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    toml = (repo / "kernelwatch.toml").read_text()
    (repo / "kernelwatch.toml").write_text("[suite\n")
    broken = commit_all(repo, "a broken suite file")
    (repo / "kernelwatch.toml").write_text(toml)
    fixed = commit_all(repo, "the suite file again")
    doc = execute(
        RunRequest(source=str(repo), rev=fixed, only="wander|n=256", cache_dir=tmp_path / "c")
    )
    assert "paired_base" not in doc
    assert f"base {broken[:12]} could not be prepared" in doc["log_tail"], doc["log_tail"]
    wander = next(w["timing"] for w in doc["workloads"] if w["name"] == "wander")
    assert len(wander["processes"]) == 6


class _Profiled:
    """What the ncu pass leaves for timing (it needs a GPU; runner.profile.capture.Profiling):
    the launches whose signature changed since the last one profiled."""

    def __init__(self, relaunched: dict[str, str]) -> None:
        self.relaunched = relaunched

    def capture(self, *args: object) -> None:
        pass


def _short_and_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relaunched: dict[str, str]
) -> tuple[list[tuple[str, int, list[str]]], list[str], str, Any]:
    """fma[n=512] of the CPU suite's second commit as a short GPU launch (sampled on four
    placements in every process), checked and timed by the pipeline's own phases."""
    timed = _gpu_like(monkeypatch)
    inner = pipeline.run_phase

    def short_phase(suite: Any, mode: str, ids: list[str], **kw: Any) -> Any:
        phase = inner(suite, mode, ids, **kw)
        for outcome in phase.outcomes.values():
            if mode == "time" and outcome.result:
                outcome.result["placements"] = 4
        return phase

    for module in (pipeline, timing_passes, doubtful, paired):
        monkeypatch.setattr(module, "run_phase", short_phase)
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    suite = load_suite(repo)
    infos = [w for w in run_phase(suite, "list", []).listing if w["id"] == "fma[n=512]"]
    records = {w["id"]: WorkloadRecord(info=w) for w in infos}
    base = paired.BaseCommit(
        Checkouts(tmp_path / "c"), str(repo), first, tmp_path / "c", lambda s: 1
    )
    lines: list[str] = []
    try:
        with WarmWorkers(suite, []) as warm:
            pipeline._check_time_and_profile(suite, infos, records, {}, warm,
                                             _Profiled(relaunched), Progress(),
                                             lines.append, lambda: None, base)  # fmt: skip
    finally:
        base.close()
    timed[:] = [(tree == repo.name, seed, ids) for tree, seed, ids in timed]
    return timed, lines, first, records["fma[n=512]"]


def test_a_short_launch_that_changed_is_timed_against_the_base_in_place_of_its_own_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not in the suite's processes (the ncu pass told the change before them), no short
    processes of the head alone (seeds 3 to 5), but three process pairs against the parent,
    base then head (seeds 6 to 8): those are its timing."""
    timed, lines, first, record = _short_and_changed(
        tmp_path, monkeypatch, {"fma[n=512]": "kernel fma_cpu: its code"}
    )
    pairs = [(side, seed, ["fma[n=512]"]) for seed in (6, 7, 8) for side in (False, True)]
    assert timed == pairs, timed
    assert not any("short launches" in line for line in lines), lines
    said = (
        "launch changed since the last one measured (fma[n=512]: kernel fma_cpu: its code) "
        f"timed interleaved with base {first[:12]}"
    )
    assert any(said in line for line in lines), lines
    assert len(record.timings) == 3
    assert all(f"with base {first[:12]}" in o.result["stop_reason"] for o in record.timings)


def test_a_short_launch_that_did_not_change_gets_its_own_processes_and_no_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timed, lines, _, record = _short_and_changed(tmp_path, monkeypatch, {})
    assert timed == [(True, seed, ["fma[n=512]"]) for seed in range(6)], timed
    assert any("1 short launches" in line for line in lines), lines
    assert len(record.timings) == 6

"""Workloads run in child processes: hangs are killed, crashes reported, the rest go on."""

from __future__ import annotations

import dataclasses

import pytest

from runner.measure import run_phase
from runner.suite import load_suite
from tests.runner.gitrepo import CPU_SUITE


@pytest.fixture
def suite(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KW_FIXTURE_MISBEHAVE", "crash,hang,nan")
    loaded = load_suite(CPU_SUITE)
    return dataclasses.replace(
        loaded, timing=dataclasses.replace(loaded.timing, timeout_seconds=3.0, max_seconds=0.3)
    )


def test_listing_describes_every_workload(suite) -> None:
    listing = run_phase(suite, "list", []).listing
    ids = [w["id"] for w in listing]
    assert ids == ["fma[n=256]", "fma[n=512]", "crash[n=8]", "hang[n=8]", "nan[n=8]"]
    assert listing[0]["flops"] == 2 * 256 * 256
    assert listing[0]["kernels"] == ["fma_cpu"]


def test_crash_and_hang_are_reported_and_the_others_still_run(suite) -> None:
    ids = ["crash[n=8]", "fma[n=256]", "hang[n=8]", "nan[n=8]", "fma[n=512]"]
    seen: list[str] = []
    phase = run_phase(suite, "check", ids, on_done=lambda wid, _: seen.append(wid))
    out = phase.outcomes
    assert out["crash[n=8]"].status == "crashed"
    assert "exit code 3" in out["crash[n=8]"].error
    assert out["hang[n=8]"].status == "timeout"
    assert "killed after 3 s" in out["hang[n=8]"].error
    assert out["fma[n=256]"].result["passed"] is True
    assert out["fma[n=512]"].result["passed"] is True
    nan = out["nan[n=8]"].result
    assert nan["passed"] is False
    assert nan["error_norm"] is None
    assert nan["unwritten"] == 1
    assert sorted(seen) == sorted(ids)


def test_timing_gives_raw_samples_and_a_reason_to_stop(suite) -> None:
    phase = run_phase(suite, "time", ["fma[n=256]"])
    result = phase.outcomes["fma[n=256]"].result
    assert result["method"] == "host"
    assert len(result["samples"]) >= suite.timing.min_samples
    assert all(s > 0 for s in result["samples"])
    assert result["stop_reason"]


def test_an_unimportable_suite_fails_the_listing(tmp_path) -> None:
    (tmp_path / "kernelwatch.toml").write_text(
        "[suite]\nname='x'\nworkloads='broken'\ndevice='cpu'\n"
    )
    (tmp_path / "broken.py").write_text("raise ImportError('no such thing')\n")
    with pytest.raises(RuntimeError, match="no such thing"):
        run_phase(load_suite(tmp_path), "list", [])
    phase = run_phase(load_suite(tmp_path), "check", ["a", "b"])
    assert {o.status for o in phase.outcomes.values()} == {"crashed"}
    assert "no such thing" in phase.outcomes["a"].error


def test_concurrent_check_workers_give_the_sequential_outcomes(suite) -> None:
    ids = ["crash[n=8]", "fma[n=256]", "hang[n=8]", "nan[n=8]", "fma[n=512]"]
    seen: list[str] = []
    phase = run_phase(
        suite, "check", ids, processes=3, on_done=lambda wid, _: seen.append(wid),
        weights={"fma[n=512]": 3e6, "fma[n=256]": 1e6},
    )  # fmt: skip
    out = phase.outcomes
    assert list(out) == ids
    assert out["crash[n=8]"].status == "crashed"  # crashed beside others, then alone: crashed
    assert "exit code 3" in out["crash[n=8]"].error
    assert out["hang[n=8]"].status == "timeout"
    assert out["fma[n=256]"].result["passed"] and out["fma[n=512]"].result["passed"]
    assert out["nan[n=8]"].result["passed"] is False
    assert sorted(seen) == sorted(ids)  # each reported once, the retried one by its retry


def test_balance_spreads_the_weight_and_keeps_the_order() -> None:
    from runner.measure import balance

    ids = ["a", "b", "c", "d", "e"]
    groups = balance(ids, 2, {"a": 10.0, "b": 1.0, "c": 9.0, "d": 1.0, "e": 1.0})
    assert sorted(i for g in groups for i in g) == ids
    assert not any("a" in g and "c" in g for g in groups)  # the two heavy ones apart
    assert all(g == sorted(g) for g in groups)
    assert balance(["x"], 3, {}) == [["x"]]
    assert balance([], 3, {}) == []

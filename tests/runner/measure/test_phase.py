"""Workloads run in child processes: hangs are killed, crashes reported, the rest go on."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import pytest

from runner.measure.phase import WarmWorkers, run_phase
from runner.suite.load import load_suite
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
    from runner.measure.phase import balance

    ids = ["a", "b", "c", "d", "e"]
    groups = balance(ids, 2, {"a": 10.0, "b": 1.0, "c": 9.0, "d": 1.0, "e": 1.0})
    assert sorted(i for g in groups for i in g) == ids
    assert not any("a" in g and "c" in g for g in groups)  # the two heavy ones apart
    assert all(g == sorted(g) for g in groups)
    assert balance(["x"], 3, {}) == [["x"]]
    assert balance([], 3, {}) == []


@pytest.fixture
def marking_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The CPU suite, its workloads module noting the pid of each process that imports it."""
    root = tmp_path / "suite"
    shutil.copytree(CPU_SUITE, root)
    module = root / "cpu_kernels.py"
    note = 'open(os.environ["KW_IMPORTED"], "a").write(f"{os.getpid()}\\n")\n'
    module.write_text(
        module.read_text().replace("import numpy as np\n", "import numpy as np\n" + note, 1)
    )
    monkeypatch.setenv("KW_IMPORTED", str(tmp_path / "imported"))
    loaded = load_suite(root)
    return dataclasses.replace(loaded, timing=dataclasses.replace(loaded.timing, max_seconds=0.3))


def imported(suite) -> list[int]:
    path = suite.root.parent / "imported"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_a_warm_worker_waits_without_the_suites_code_and_then_runs_the_phase(
    marking_suite,
) -> None:
    warm = WarmWorkers(marking_suite, [("time", 1), ("check", 0)])
    try:
        ((timer, _),) = warm.waiting[("time", 1)]
        time.sleep(1.5)  # time to warm up: it still waits, the suite not imported
        assert timer.poll() is None and imported(marking_suite) == []
        assert warm.take("time", 0) is None  # none for another seed
        phase = run_phase(marking_suite, "time", ["fma[n=256]"], seed=1, warm=warm)
        assert phase.outcomes["fma[n=256]"].status == "ok"
        assert imported(marking_suite) == [timer.pid]  # the warm worker timed it
        assert timer.returncode == 0 and warm.waiting[("time", 1)] == []
        checker = warm.waiting[("check", 0)][0][0]
    finally:
        warm.close()
    assert checker.returncode == 0  # never needed: told so, it exited
    assert imported(marking_suite) == [timer.pid]


def test_a_crash_in_a_warm_worker_goes_on_in_a_fresh_one(suite) -> None:
    warm = WarmWorkers(suite, [("check", 0)])
    ids = ["crash[n=8]", "fma[n=256]", "nan[n=8]"]
    try:
        out = run_phase(suite, "check", ids, warm=warm).outcomes
    finally:
        warm.close()
    assert out["crash[n=8]"].status == "crashed" and "exit code 3" in out["crash[n=8]"].error
    assert out["fma[n=256]"].result["passed"] is True
    assert out["nan[n=8]"].result["passed"] is False


def test_a_warm_worker_that_died_while_waiting_is_replaced_by_a_fresh_one(marking_suite) -> None:
    warm = WarmWorkers(marking_suite, [("check", 0), ("check", 0)])
    try:
        procs = [proc for proc, _ in warm.waiting[("check", 0)]]
        for proc in procs:
            proc.kill()
            proc.wait()
        phase = run_phase(marking_suite, "check", ["fma[n=256]", "fma[n=512]"], processes=2,
                          warm=warm)  # fmt: skip
    finally:
        warm.close()
    assert all(o.result["passed"] for o in phase.outcomes.values())
    assert len(imported(marking_suite)) == 2 and not set(imported(marking_suite)) & {
        p.pid for p in procs
    }


def test_a_worker_under_kernelwatch_worker_profile_says_where_its_seconds_went(
    suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "profiles"
    monkeypatch.setenv("KERNELWATCH_WORKER_PROFILE", str(folder))
    phase = run_phase(suite, "time", ["fma[n=256]"])
    assert phase.outcomes["fma[n=256]"].status == "ok"
    written = sorted(folder.glob("time-*.txt"))
    assert len(written) == 1
    text = written[0].read_text()
    assert text.startswith("time worker ")
    assert "s in main" in text.splitlines()[0]
    assert "time_workload" in text  # the calls, by cumulative time


def test_a_phase_tells_its_workers_seconds_before_the_first_workload_and_after_the_last(
    suite,
) -> None:
    started = time.monotonic()
    phase = run_phase(suite, "time", ["fma[n=256]", "fma[n=512]"])
    wall = time.monotonic() - started
    assert all(o.status == "ok" for o in phase.outcomes.values())
    assert phase.starting > 0.0 and phase.closing > 0.0  # a fresh Python before; its exit after
    assert phase.starting + phase.closing < wall


def test_workers_side_by_side_tell_the_slowest_ones_seconds(suite) -> None:
    phase = run_phase(suite, "check", ["fma[n=256]", "fma[n=512]"], processes=2)
    assert all(o.status == "ok" for o in phase.outcomes.values())
    assert phase.starting > 0.0 and phase.closing > 0.0


def test_ready_returns_once_every_waiting_worker_has_warmed_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers whose preload takes a second: `ready` waits for them (none is still importing
    when a process beside them is timed), and a phase then takes one as usual."""
    tree = shutil.copytree(CPU_SUITE, tmp_path / "suite")
    (tree / "slow_import.py").write_text("import time\ntime.sleep(1.0)\n")
    monkeypatch.setenv("KERNELWATCH_PRELOAD", "slow_import")
    monkeypatch.delenv("KW_FIXTURE_MISBEHAVE", raising=False)
    suite = load_suite(tree)
    started = time.monotonic()
    with WarmWorkers(suite, [("time", 0), ("time", 1)], context=False) as warm:
        warm.ready(30.0)
        assert time.monotonic() - started >= 1.0
        phase = run_phase(suite, "time", ["fma[n=256]"], seed=1, warm=warm)
        assert phase.outcomes["fma[n=256]"].status == "ok"
        assert len(warm.waiting[("time", 0)]) == 1 and not warm.waiting[("time", 1)]

"""The H100 signal-quality harness on the CPU: its recording half driven by a stand-in for the
runner's worker processes (synthetic samples from a noise model), its analysis half on that
file through the service's real verdicts. A recording whose injected slowdowns are not slower
must come out as FAIL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import signal_quality_gpu as sq
from benchmarks import signal_quality_record as sqr
from benchmarks import signal_quality_workloads as sqw
from runner.measure import phase as measure

ROOT = Path(__file__).resolve().parents[2]

# Per class: fixed part (us), us per million elements, process-to-process and sample-to-sample
# relative spread; about what an H100 shows for these sizes (the README's timing section).
MODEL = {
    "long": (2.0, 2.6, 0.001, 0.003),
    "mid": (2.5, 2.8, 0.004, 0.01),
    "short": (2.0, 2.8, 0.01, 0.03),
}


def fake_runner(monkeypatch: pytest.MonkeyPatch, slower: bool) -> list[tuple[str, int]]:
    """Replace the worker processes: every (mode, seed) asked for is logged; `slower=False`
    makes every workload as fast as its class's base (a harness that injects nothing)."""
    calls: list[tuple[str, int]] = []
    rng = np.random.default_rng(7)

    def run_phase(suite, mode, ids, *, env=None, seed=0, on_done=None):
        calls.append((mode, seed))
        phase = measure.Phase(mode)
        if mode == "list":
            phase.listing = [{"id": w.id} for w in sqw.all_workloads()]
            phase.device = {"name": "Fake H100"}
            return phase
        assert suite.workloads == sq.WORKLOADS_MODULE and suite.device == "cuda"
        plan = json.loads(Path(env[sqw.PLAN_ENV]).read_text())
        workloads = {w.id: w for w in sqw.plan_workloads(plan)}
        base_n = {c["key"]: c["n"]["0"] for c in plan["classes"]}
        for wid in ids:
            w = workloads[wid]
            fixed, per_m, process, sample = MODEL[w.cls]
            n = w.n if slower else base_n[w.cls]
            truth = (fixed + per_m * n / 1e6) * (1 + process * rng.standard_normal())
            samples = truth * (1 + np.abs(rng.normal(0, sample, 30)))
            phase.outcomes[wid] = measure.Outcome(
                "ok",
                result={
                    "samples": samples.tolist(),
                    "stop_reason": "fake",
                    "method": "cupti" if truth < 20 else "cuda_events",
                    "sm_clock_mhz": 1980.0,
                    "throttle_reasons": [],
                },
            )
        return phase

    monkeypatch.setattr(measure, "run_phase", run_phase)
    monkeypatch.setattr(sqr, "_build", lambda build_dir, arch: {"seconds": 0.0, "log": "fake"})
    monkeypatch.setattr(
        "runner.host.environment.collect",
        lambda device, gpu: {"gpu": {"name": gpu["name"]}, "clocks_mhz": {"sm_max": 1980.0}},
    )
    return calls


def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slower: bool) -> tuple[Path, list]:
    calls = fake_runner(monkeypatch, slower)
    out = tmp_path / "recorded.json.gz"
    assert sq.main(["--record", str(out), "--max-rounds", "12", "--budget", "600"]) == 0
    return out, calls


def test_recording_uses_the_runners_processes_and_calibrates(tmp_path, monkeypatch) -> None:
    out, calls = record(tmp_path, monkeypatch, slower=True)
    data = sq.load(out)
    # Calibration in 6 processes, then 12 runs of 3 processes (seeds 0, 1, 2 as the runner's).
    assert calls[0] == ("list", 0)
    assert [s for m, s in calls[1:7]] == list(range(6))
    assert [s for m, s in calls[7:]] == [0, 1, 2] * 12
    assert len(data["rounds"]) == 12 and data["processes"] == 3
    # The short class has a large fixed part: more than 10% more work for 10% more time.
    short = next(c for c in data["plan"]["classes"] if c["key"] == "short")
    assert 0.4 < data["calibration"]["classes"]["short"]["elasticity"] < 0.9
    assert short["n"]["0.1"] > 1.1 * short["n"]["0"]
    # Every workload of every round: one result per process, with its raw samples.
    r = data["rounds"][0]
    assert all(len(v) == 3 and all(p["samples"] for p in v) for v in r["results"].values())


def test_analysis_of_a_good_recording_passes(tmp_path, monkeypatch, capsys) -> None:
    out, _ = record(tmp_path, monkeypatch, slower=True)
    capsys.readouterr()
    code = sq.main(["--analyse", str(out), "--trials", "150", "--aa-per-class", "3"])
    text = capsys.readouterr().out
    assert "12 independent runs of every workload" in text
    assert "K = 8" in text and "A/A alerts" in text
    classes, dropped = sq.pools(sq.load(out))
    tally = sq.measure(classes, trials=150, aa_per_class=3, seed=0, k=8)
    assert dropped == 0
    assert tally.recall[("long", 0.02)] >= 0.95 and tally.recall[("short", 0.1)] >= 0.95
    assert tally.recall[("short", 0.01)] < 0.5  # 1% of a noisy 6 us kernel sits in the noise
    assert abs(tally.measured[("mid", 0.05)] - 0.05) < 0.01  # calibrated: +5% in time
    assert max(tally.false_alerts.values()) <= 0.01
    assert code == 0 and text.count("PASS") == 3, text


def test_analysis_fails_when_nothing_was_injected(tmp_path, monkeypatch, capsys) -> None:
    out, _ = record(tmp_path, monkeypatch, slower=False)
    capsys.readouterr()
    code = sq.main(["--analyse", str(out), "--trials", "100", "--aa-per-class", "2"])
    text = capsys.readouterr().out
    assert code == 1 and text.count("FAIL") == 3, text


def test_analysis_refuses_too_few_baseline_runs(tmp_path, monkeypatch) -> None:
    out, _ = record(tmp_path, monkeypatch, slower=True)
    data = sq.load(out)
    data["rounds"] = data["rounds"][:3]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data))
    classes, _ = sq.pools(sq.load(short))
    with pytest.raises(ValueError, match="baseline runs recorded"):
        sq.measure(classes, trials=10, aa_per_class=1, seed=0, k=8)


def test_recording_half_imports_nothing_of_the_service() -> None:
    code = (
        "import sys; import benchmarks.signal_quality_gpu as m; import runner.measure.phase, "
        "runner.host.environment; bad = [k for k in sys.modules if k.split('.')[0] in "
        "('service', 'scipy', 'sqlalchemy', 'fastapi', 'pydantic')]; print(bad); "
        "sys.exit(bool(bad))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workloads_follow_the_suite_protocol() -> None:
    half = {x: 1 + 2 * x for x in sqw.MAGNITUDES}  # time grows half as fast as work
    plan = sqw.make_plan({"long": {x: 1 + x for x in sqw.MAGNITUDES}, "mid": half, "short": half})
    workloads = sqw.plan_workloads(plan)
    assert len({w.id for w in workloads}) == len(workloads) == 18
    for w in workloads:
        assert w.kernels == ("dropout_fwd",) and w.n % 4 == 0
        assert w.bytes == 8 * w.n
    short = {w.inject: w.n for w in workloads if w.cls == "short"}
    assert short[0.1] == sqw.round4(short[0.0] * 1.2)


def test_work_is_read_off_the_calibration_curve() -> None:
    rng = np.random.default_rng(3)
    # Time change 0.6 w + 1.5 w^2 at work change w (a convex curve), measured with 2% noise
    # in 12 processes: the fit finds the work for +10% in time within a few tenths of a percent.
    points = [
        (1 + w, 1 + 0.6 * w + 1.5 * w * w + 0.02 * rng.standard_normal())
        for w in (0.04, 0.08, 0.12, 0.16)
        for _ in range(12)
    ]
    exact = (-0.6 + np.sqrt(0.36 + 4 * 1.5 * 0.1)) / (2 * 1.5)
    assert sqw.work_for_time(points, 1.10) - 1 == pytest.approx(exact, abs=0.01)
    # A straight line is found as such; the implied d(time)/d(work) stays within bounds.
    line = [(1 + w, 1 + 0.8 * w) for w in (0.05, 0.1, 0.2)]
    assert sqw.work_for_time(line, 1.04) == pytest.approx(1.05)
    assert sqw.work_for_time([(1.2, 1.0), (1.1, 1.0)], 1.01) == pytest.approx(1.04)
    assert sqw.work_for_time([(1.2, 1.9), (1.1, 1.45)], 1.1) == pytest.approx(1 + 0.1 / 1.5)

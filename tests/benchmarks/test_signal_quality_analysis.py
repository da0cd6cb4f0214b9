"""benchmarks/signal_quality_analysis.py on small recordings written here: reading a recording,
its pools of runs (failed ones dropped), the verdicts' PASS and FAIL, what it refuses; and the
header of the H100 recording kept in benchmarks/results."""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import signal_quality_analysis as sqa
from benchmarks.signal_quality_workloads import InjectedDropout

H100 = Path(sqa.__file__).parent / "results" / "signal_quality_h100.json"
BASE_ID = InjectedDropout("long", 0.0, 1000).id
HEAD_ID = InjectedDropout("long", 0.05, 1050).id


def process(rng: np.random.Generator, us: float, clock: float, throttles: list[str]) -> dict:
    samples = us * (1 + 0.002 * rng.standard_normal(20))
    return {"samples": samples.tolist(), "method": "cuda_events", "sm_clock_mhz": clock,
            "throttle_reasons": throttles}  # fmt: skip


def recording(slower: float, rounds: int = 6, failed: dict[int, Any] | None = None) -> dict:
    """One class (>= 50 us): its base at 100 us and one head `slower` times it, two processes a
    run; `failed` replaces the head's processes of those rounds."""
    rng = np.random.default_rng(5)
    out = []
    for r in range(rounds):
        throttles = ["sw_power_cap"] if r == 0 else []
        base = [process(rng, 100.0, 1980.0 - r, throttles) for _ in range(2)]
        head = [process(rng, 100.0 * slower, 1980.0, []) for _ in range(2)]
        results = {BASE_ID: base, HEAD_ID: (failed or {}).get(r, head)}
        out.append({"index": r, "results": results})
    return {
        "format": sqa.FORMAT, "created_at": "2026-11-21T02:16:33+00:00",
        "commit": "75ea151487f91965bdde13cf9e1ae5f80833f539+dirty",
        "environment": {"gpu": {"name": "Test GPU"}, "driver_version": "580.1",
                        "cuda_runtime_version": "13.0", "clocks_mhz": {"sm_max": 1980.0}},
        "timing": {"min_samples": 10, "max_samples": 2000, "max_seconds": 1.0,
                   "target_rel_spread": 0.005},
        "processes": 2, "inject": "work", "wall_s": 12.5,
        "plan": {"magnitudes": [0.05],
                 "classes": [{"key": "long", "name": ">= 50 us", "n": {"0": 1000, "0.05": 1050}}]},
        "rounds": out,
    }  # fmt: skip


def analyse(path: Path, trials: int = 40) -> int:
    args = argparse.Namespace(analyse=str(path), k=0, trials=trials, aa_per_class=2, seed=0)
    return sqa.analyse(args)


def test_a_recording_is_read_plain_or_gzipped_and_checked(tmp_path: Path) -> None:
    data = recording(1.05)
    plain, packed = tmp_path / "r.json", tmp_path / "r.json.gz"
    plain.write_text(json.dumps(data))
    packed.write_bytes(gzip.compress(json.dumps(data).encode()))
    assert sqa.load(plain) == sqa.load(str(packed)) == data
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**data, "format": "kernelwatch-signal-quality-gpu/0"}))
    with pytest.raises(ValueError) as refused:
        sqa.load(other)
    assert str(refused.value) == (
        f"{other}: not a kernelwatch-signal-quality-gpu/1 file "
        "(format 'kernelwatch-signal-quality-gpu/0')"
    )


def test_pools_hold_each_runs_processes_and_drop_runs_with_a_failed_one() -> None:
    data = recording(1.05, failed={4: [None, {"samples": [1.0]}], 5: [{"samples": []}]})
    (pools,), dropped = sqa.pools(data)
    assert dropped == 2
    assert (pools.key, pools.name, pools.target) == ("long", ">= 50 us", 0.02)
    assert pools.base.rounds == [0, 1, 2, 3, 4, 5] and pools.heads[0.05].rounds == [0, 1, 2, 3]
    assert pools.work == {0.05: pytest.approx(1.05)}
    assert [len(s) for s in pools.base.samples] == [40] * 6  # both processes' samples pooled
    assert pools.base.methods == {"cuda_events"}
    assert pools.heads[0.05].medians == pytest.approx([105.0] * 4, rel=0.002)


def test_a_clear_slowdown_passes_and_its_header_says_how_it_was_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(recording(1.05)))
    assert analyse(path) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "signal quality on Test GPU (driver 580.1, CUDA 13.0), recorded "
        "2026-11-21T02:16:33+00:00 at commit 75ea151487f9+dirty"
    )
    assert lines[1] == (
        "  SM clock seen while sampling 1975-1980 MHz (max 1980.0 MHz); throttle reasons seen: "
        "sw_power_cap"
    )
    assert "[timing] 10-2000 samples, <= 1 s, stop at 0.5% spread or settled), 12.5 s" in lines[2]
    assert lines[3].endswith("dropout_fwd on more elements, work scaled by (1 + magnitude)")
    assert "6 independent runs of every workload (each 2 processes; 0 runs dropped" in lines[4]
    assert "trials: 40 simulated runs of 3 series" in lines[5] and "K = 8 runs" in lines[5]
    base = re.fullmatch(r"  >= 50 us : baseline median +([\d.]+) us over 6 runs, run-to-run "
                        r"spread \(MAD/median\) [\d.]+%, timer cuda_events", lines[6])  # fmt: skip
    assert base and float(base[1]) == pytest.approx(100.0, rel=0.001)
    # Six runs of the base leave five for a baseline that excludes the head's own round.
    assert lines[7] == "  note: baselines shrunk to {'long': 5} runs (too few recorded)"
    assert lines[8].split() == ["class", "5%", "A/A", "alerts", "target"]
    assert lines[9].split() == [">=", "50", "us", "100.0%", "0.00%", "PASS", "(>=95%", "at",
                                ">=2%,", "<=1%", "A/A)"]  # fmt: skip
    assert lines[-1] == "A/A: 80 comparisons in all, 0 alerts"


def test_a_recording_whose_heads_are_not_slower_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(recording(1.0)))
    assert analyse(path) == 1
    out = capsys.readouterr().out
    assert "   FAIL (>=95% at >=2%, <=1% A/A)" in out
    heads = next(line for line in out.splitlines() if line.startswith("  heads"))
    assert heads.split()[:2] == ["heads", "0/6"]  # of six recorded head runs, none caught


def test_a_head_with_no_run_left_is_refused() -> None:
    (pools,), _ = sqa.pools(recording(1.05, failed={r: [None] for r in range(6)}))
    with pytest.raises(ValueError, match=r"^class >= 50 us: no recorded run of the 5% head$"):
        sqa.measure([pools], trials=5, aa_per_class=1, seed=0, k=8)


def test_the_header_of_the_h100_recording() -> None:
    data = sqa.load(H100)
    classes, dropped = sqa.pools(data)
    lines = sqa.header(data, classes, dropped, trials=100, aa_per_class=2, k=8)
    assert lines[0].startswith("signal quality on NVIDIA H100 80GB HBM3 (driver 580.159.04")
    assert lines[0].endswith("at commit 75ea151487f9+dirty")
    assert "1980-1980 MHz (max 1980.0 MHz); throttle reasons seen: none" in lines[1]
    assert "read off a calibration in 6 processes (quadratic fit, time change at " in lines[3]
    assert "+4%/+8%/+12%/+16% work: >= 50 us +3.7%/+7.5%/+11.2%/+15.0%;" in lines[3]
    assert "23 independent runs of every workload (each 3 processes; 0 runs dropped" in lines[4]
    assert "trials: 100 simulated runs of 21 series" in lines[5]
    assert [line.split(":")[0].strip() for line in lines[6:]] == [">= 50 us", "10-50 us", "< 10 us"]
    assert lines[8].endswith("timer cupti")


def test_small_helpers() -> None:
    assert sqa._short(None) == "?"
    assert sqa._short("ab" * 20) == "ab" * 6
    assert sqa._short("ab" * 20 + "+dirty") == "ab" * 6 + "+dirty"
    assert sqa._calibrated({"fitted": [0.03, 0.07]}) == [0.03, 0.07]
    assert sqa._calibrated({"points": [[1.04, 1.035], [1.08, 1.07]]}) == pytest.approx(
        [0.035, 0.07]
    )
    assert sqa._mad([100.0, 101.0, 99.0, 100.0, 130.0]) == pytest.approx(0.014826)
    assert sqa._mad([0.0, 0.0]) == 0.0

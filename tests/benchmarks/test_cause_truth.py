"""benchmarks/cause_truth.py on the CPU: which workloads it times and how (A B / B A after a
warm-up), and that what it writes is what benchmarks/cause_gpu.py's table reads (the timing
itself needs a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cause_gpu, cause_truth
from benchmarks.history_truth import mean_over_processes

ROOT = Path(__file__).resolve().parents[2]


def test_it_times_every_case_by_cuda_events_and_imports_without_cupy() -> None:
    """Its timer is CUDA events: a case the suite timed otherwise would be compared with a truth
    of another method. Nothing of CuPy is imported until it measures."""
    code = (
        "import sys, json; import benchmarks.cause_truth as t; "
        "print(json.dumps([[w.id, w.timing_method] for w in t.all_workloads()])); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cupy'))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed, imported = done.stdout.splitlines()
    workloads = dict(json.loads(listed))
    assert list(workloads) == [f"cause[case={case}]" for case, _, _ in cause_gpu.CASES]
    assert set(workloads.values()) == {"cuda_events"}
    assert imported == "[]"


def test_base_and_head_are_warmed_up_then_taken_in_alternating_order() -> None:
    taken: list[str] = []

    def sample(side: str) -> float:
        taken.append(side)
        warming = len(taken) <= 2 * cause_truth.WARMUP
        return 1000.0 if warming else {"base": 50.0, "head": 55.0}[side]

    result = cause_truth.alternated(
        sample, cause_truth.WARMUP, cause_truth.ROUNDS, cause_truth.SAMPLES
    )
    warm, n = cause_truth.WARMUP, cause_truth.SAMPLES
    assert taken[: 2 * warm] == ["base"] * warm + ["head"] * warm
    rounds = [taken[2 * warm + 2 * n * r :][: 2 * n] for r in range(cause_truth.ROUNDS)]
    assert rounds[0] == ["base"] * n + ["head"] * n
    assert rounds[1] == ["head"] * n + ["base"] * n
    assert len(taken) == 2 * warm + 2 * n * cause_truth.ROUNDS
    # The warm-ups' 1000 us count for nothing.
    assert result == {"base_us": 50.0, "head_us": 55.0, "change": pytest.approx(0.10)}


def test_what_it_writes_is_what_the_cause_table_reads(tmp_path: Path) -> None:
    """main's OUT.json: the processes' mean per workload id, under "workloads"."""
    ids = [w.id for w in cause_truth.all_workloads()]
    processes = [
        {wid: {"change": 0.1 * i + p, "base_us": 100.0, "head_us": 110.0} for i, wid in
         enumerate(ids)}
        for p in (0.0, 0.02)
    ]  # fmt: skip
    out = tmp_path / "truth.json"
    out.write_text(json.dumps({"seconds": 1.0, "workloads": mean_over_processes(processes)}))
    truth = json.loads(out.read_text())["workloads"]
    table = cause_gpu.rows([], truth)
    assert [r["case"] for r in table] == [case for case, _, _ in cause_gpu.CASES]
    assert [r["truth"] for r in table] == pytest.approx([0.1 * i + 0.01 for i in range(10)])
    assert "| dram | more DRAM traffic | +1.0% | - | no alert | - | NO |" in (
        cause_gpu.render(table)
    )

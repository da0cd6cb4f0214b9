"""benchmarks.push_to_status on a CPU suite: a real service, agent and webhook, and the GitHub
stand-in that records each commit status (the GPU figure comes from the same script on the
device)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import push_to_status
from tests.runner.gitrepo import CPU_SUITE


def test_each_push_is_timed_to_its_final_commit_status(tmp_path: Path, capsys) -> None:
    out = tmp_path / "rows.json"
    code = push_to_status.main([
        "--suite", str(CPU_SUITE), "--cpu", "--change", "cpu_kernels.py:REPEAT = 1=>REPEAT = 2",
        "--work", str(tmp_path / "work"), "--timeout", "240", "--out", str(out),
    ])  # fmt: skip
    rows = json.loads(out.read_text())
    assert [r["commit"] for r in rows] == ["first commit", "cpu_kernels.py:REPEAT = 1=>REPEAT = 2"]
    assert all(r["state"] in ("success", "failure") and 0 < r["seconds"] < 240 for r in rows)
    assert all("correctness" in r["stages"] for r in rows), (
        rows
    )  # the runner's stages, from its log
    printed = capsys.readouterr().out
    assert "| first commit |" in printed and "(first)" in printed
    assert code == (0 if rows[1]["seconds"] <= push_to_status.BUDGET_S else 1)


def test_every_stage_of_the_job_is_read_from_the_agents_log_names_with_parentheses_too() -> None:
    log = "\n".join([
        "t INFO job 3: stage build (checkout took 0.2 s)",
        "t INFO job 13: stage ncu (build took 9.0 s)",
        "t INFO job 3: stage timing 5/6 (short) (timing 4/6 (short) took 5.0 s)",
        "t INFO job 3: stage timing 1/6 (processes apart) (6 workloads) "
        "(timing 6/6 (short) took 5.2 s)",
        "t INFO job 3: timing 1/6 (processes apart) took 1.6 s",
    ])  # fmt: skip
    assert push_to_status.stage_seconds(log, 3) == (
        "checkout 0.2, timing 4/6 (short) 5.0, timing 6/6 (short) 5.2, "
        "timing 1/6 (processes apart) 1.6"
    )

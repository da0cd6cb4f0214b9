"""benchmarks.preload_compile: its table, and a Python without torch refused in one line (the
figures themselves need torch, which the service's environment has not: runner.measure.preload
quotes a run of it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks import preload_compile


def test_the_table_lists_each_process_then_the_medians_per_kind() -> None:
    rows = [
        ("cold", {"imports": 2.0, "first_call": 5.0}),
        ("preloaded", {"imports": 6.0, "first_call": 1.5}),
        ("cold", {"imports": 2.5, "first_call": 4.0}),
        ("preloaded", {"imports": 5.0, "first_call": 2.5}),
        ("cold", {"imports": 1.0, "first_call": 4.5}),
        ("preloaded", {"imports": 7.0, "first_call": 1.0}),
    ]
    lines = preload_compile.table(rows).splitlines()
    assert len(lines) == 1 + 6 + 2
    assert lines[1].split() == ["1", "cold", "2.00", "5.00"]
    assert lines[-2].split() == ["median", "cold", "2.00", "4.50"]
    assert lines[-1].split() == ["median", "preloaded", "6.00", "1.50"]


def test_a_python_without_torch_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S -I "$@"\n')  # no site: no torch
    python.chmod(0o755)
    assert preload_compile.main(["--python", str(python), "--runs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("preload_compile: ") and "torch" in err and "\n" not in err


def test_runs_below_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        preload_compile.main(["--runs", "0"])
    assert refused.value.code == 2
    assert "--runs and --size must be at least 1" in capsys.readouterr().err

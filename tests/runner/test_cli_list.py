"""`kernelwatch-runner list` prints every id whole, as `--only` takes it (issue 36, item 3):
plain tab-separated lines when piped, and on a terminal of 80 or 120 columns a table whose
other columns wrap instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(sys.executable).with_name("kernelwatch-runner")


def _ids() -> list[str]:
    done = subprocess.run([RUNNER, "list", "--repo", str(ROOT), "--json"], capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    return [w["id"] for w in json.loads(done.stdout)]


def test_piped_list_prints_each_id_whole_on_its_line() -> None:
    done = subprocess.run([RUNNER, "list", "--repo", str(ROOT)], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[1].split("\t") == ["id", "default", "tags", "kernels", "GFLOP"]
    assert [line.split("\t")[0] for line in lines[2:]] == _ids()


@pytest.mark.parametrize("columns", [80, 120])
def test_a_terminal_table_cuts_no_id(columns: int) -> None:
    if not Path("/usr/bin/script").exists():
        pytest.skip("util-linux `script` gives the command a terminal")
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    done = subprocess.run(["script", "-qc", f"{RUNNER} list --repo {ROOT}", "/dev/null"],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = done.stdout
    assert "…" not in shown
    missing = [i for i in _ids() if i not in shown]
    assert missing == [], missing

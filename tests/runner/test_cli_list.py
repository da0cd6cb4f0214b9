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


def test_list_at_a_commit_of_a_local_repository_lists_that_commit(tmp_path: Path) -> None:
    """`--commit HEAD~1` of a local path is that commit's suite, not the working tree's; a
    name that is no commit is one line."""
    from tests.runner.gitrepo import commit_all, cpu_suite_repo

    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    module = repo / "cpu_kernels.py"
    module.write_text(module.read_text().replace(
        'Workload("fma", 512, ("fast",))]', 'Workload("fma", 512, ("fast",)), '
        'Workload("fma", 1024, ("fast",))]'))  # fmt: skip
    commit_all(repo, "one more size")

    def ids(*extra: str) -> list[str]:
        done = subprocess.run([RUNNER, "list", "--repo", str(repo), "--json", *extra],
                              capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return [w["id"] for w in json.loads(done.stdout)]

    assert ids() == ["fma[n=256]", "fma[n=512]", "fma[n=1024]"]
    assert ids("--commit", "HEAD~1") == ["fma[n=256]", "fma[n=512]"]
    bad = subprocess.run([RUNNER, "list", "--repo", str(repo), "--commit", "nosuch"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode != 0 and "nosuch" in bad.stderr.strip().splitlines()[-1]

"""benchmarks.runner_cost's commits: what each kind of `--change` does to the file (no GPU)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks import runner_cost

AUTHOR = "bench <bench@example.com>"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    src, dst = tmp_path / "src", tmp_path / "repo"
    src.mkdir()
    dst.mkdir()
    (src / "k.cu").write_text('extern "C" __global__ void scale(float* x) {\n  x[0] = 1;\n}\n')
    (src / "app.py").write_text("APP = 1\n")
    (src / "README.md").write_text("# suite\n")
    runner_cost.snapshot(src, dst, AUTHOR, "first")
    return dst


def changed(repo: Path, spec: str, run: int) -> str:
    sha = runner_cost.change(repo, spec, run, AUTHOR)
    shown = subprocess.run(["git", "show", "--stat", "--format=%s", sha], cwd=repo,
                           capture_output=True, text=True, check=True)  # fmt: skip
    return shown.stdout


def test_each_kind_of_change_is_one_commit_of_that_file(repo: Path) -> None:
    assert "k.cu" in changed(repo, "k.cu:scale", 2)
    assert "0x7FFFFFF2u" in (repo / "k.cu").read_text()  # a branch never taken
    assert "k.cu" in changed(repo, "k.cu", 3)
    assert "kernelwatch_cost_3" in (repo / "k.cu").read_text()  # an unused kernel
    assert "app.py" in changed(repo, "app.py", 4)
    assert (repo / "app.py").read_text() == "APP = 1\n\n# runner_cost: run 4\n"
    assert "README.md" in changed(repo, "README.md", 5)
    assert (repo / "README.md").read_text().endswith("<!-- runner_cost: run 5 -->\n")
    with pytest.raises(SystemExit, match="no kernel 'absent'"):
        runner_cost.change(repo, "k.cu:absent", 6, AUTHOR)

"""runner.suite.bytecode: the workers' Python bytecode in the runner's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.pipeline import RunRequest, execute
from runner.suite.build import build_env
from runner.suite.bytecode import DONT_WRITE_ENV, PREFIX_ENV, bytecode_env
from tests.runner.gitrepo import cpu_suite_repo


def test_the_bytecode_goes_to_the_cache_unless_the_host_named_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.delenv(DONT_WRITE_ENV, raising=False)
    assert bytecode_env(tmp_path) == {PREFIX_ENV: str(tmp_path / "python-bytecode")}
    assert build_env(tmp_path / "b", tmp_path)[PREFIX_ENV] == str(tmp_path / "python-bytecode")
    monkeypatch.setenv(DONT_WRITE_ENV, "1")  # written all the same: in the cache, nowhere else
    assert bytecode_env(tmp_path)[DONT_WRITE_ENV] == ""
    monkeypatch.setenv(PREFIX_ENV, "/fast/disk/pyc")
    assert bytecode_env(tmp_path) == {}
    assert PREFIX_ENV not in build_env(tmp_path / "b", tmp_path)


def test_a_runs_workers_write_their_bytecode_in_the_cache_and_its_worktree_takes_its_own_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers of a run on the CPU suite leave the bytecode of what they imported (the
    runner's worker module among it) in the cache's folder; the suite's own, imported from the
    run's worktree, goes with the worktree."""
    monkeypatch.delenv(PREFIX_ENV, raising=False)
    monkeypatch.setenv(DONT_WRITE_ENV, "1")
    repo, _, second = cpu_suite_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    doc = execute(RunRequest(source=str(repo), rev=second, only="n=256", cache_dir=cache))
    assert doc["status"] == "succeeded"
    written = cache / "python-bytecode"
    worker = Path(__file__).resolve().parents[3] / "runner" / "worker" / "process.py"
    mirror = written / worker.parent.relative_to("/")
    assert list(mirror.glob("process.*.pyc")), sorted(p.name for p in mirror.parent.glob("*"))
    left = [p for p in written.rglob("*.pyc") if "worktrees" in p.parts]
    assert left == [], left[:5]
    assert not (cache / "worktrees").exists() or list((cache / "worktrees").iterdir()) == []

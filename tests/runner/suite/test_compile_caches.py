"""Compilers that run inside a workload's `prepare` (Triton, Inductor, PyTorch extensions, the
driver's PTX JIT) keep what they compiled in the runner's build cache, kept between commits."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.run.pipeline import RunRequest, execute
from runner.suite.build import COMPILE_CACHES, build_env
from tests.runner.gitrepo import commit_all, cpu_suite_repo


def test_each_compile_cache_is_a_folder_of_the_build_cache_unless_the_host_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in COMPILE_CACHES:
        monkeypatch.delenv(variable, raising=False)
    env = build_env(tmp_path / "build", tmp_path / "cache")
    assert env["KERNELWATCH_BUILD_DIR"] == str(tmp_path / "build")
    assert env["KERNELWATCH_BUILD_CACHE"] == str(tmp_path / "cache" / "builds")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "cache" / "builds" / "triton")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "builds" / "inductor")
    assert env["TORCH_EXTENSIONS_DIR"] == str(tmp_path / "cache" / "builds" / "torch-extensions")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/fast/disk/triton")
    assert "TRITON_CACHE_DIR" not in build_env(tmp_path / "build", tmp_path / "cache")


def test_the_build_sees_the_same_caches_at_every_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two commits of the CPU suite whose build prints where Triton would cache: the same folder
    under the runner's cache, both times (its workers get the same environment)."""
    for variable in COMPILE_CACHES:
        monkeypatch.delenv(variable, raising=False)
    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    toml = repo / "kernelwatch.toml"
    toml.write_text(
        toml.read_text().replace(
            "print('build ok', cpu_kernels.REPEAT)",
            "import os; print('build ok', cpu_kernels.REPEAT, os.environ['TRITON_CACHE_DIR'])",
        )
    )
    says = commit_all(repo, "the build says where Triton caches")
    kernels = repo / "cpu_kernels.py"
    kernels.write_text(kernels.read_text() + "# a later commit\n")
    later = commit_all(repo, "a later commit")
    cache = tmp_path / "cache"
    expected = str(cache / "builds" / "triton")
    for rev in (says, later):
        doc = execute(RunRequest(source=str(repo), rev=rev, only="n=256", cache_dir=cache))
        assert doc["status"] == "succeeded"
        assert f"{expected}\n" in doc["build"]["log_tail"], doc["build"]["log_tail"]

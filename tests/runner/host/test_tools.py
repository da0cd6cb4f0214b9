"""runner.host.tools: where a runner host's NVIDIA tools are found. nvcc as a suite's build
finds it ($NVCC, the PATH, $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda), skipping what is no
executable file; ncu by $KERNELWATCH_NCU (which, once set, is the only answer), the PATH, then
the newest of the usual install folders. Each test builds its own tools in a temporary folder
and a PATH of only that folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.host import tools

NVCC_VARIABLES = ("NVCC", "CUDA_HOME", "CUDA_PATH")


def executable(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of one empty folder and none of the variables the lookups read."""
    path = tmp_path / "bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    for variable in (*NVCC_VARIABLES, "KERNELWATCH_NCU"):
        monkeypatch.delenv(variable, raising=False)
    return path


def test_nvcc_named_by_its_variable_comes_before_the_path(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executable(bare / "nvcc")
    named = executable(tmp_path / "cuda-13.1" / "bin" / "nvcc")
    monkeypatch.setenv("NVCC", str(named))
    assert tools.find_nvcc() == str(named)


def test_an_nvcc_that_is_no_executable_file_is_passed_over(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NVCC", str(executable(tmp_path / "nvcc-text", mode=0o644)))
    on_path = executable(bare / "nvcc")
    assert tools.find_nvcc() == str(on_path)
    monkeypatch.setenv("NVCC", str(tmp_path))  # a folder is no nvcc either
    assert tools.find_nvcc() == str(on_path)


def test_cuda_home_comes_before_cuda_path_when_the_path_has_no_nvcc(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = executable(tmp_path / "home" / "bin" / "nvcc")
    other = executable(tmp_path / "other" / "bin" / "nvcc")
    monkeypatch.setenv("CUDA_HOME", str(home.parents[1]))
    monkeypatch.setenv("CUDA_PATH", str(other.parents[1]))
    assert tools.find_nvcc() == str(home)
    monkeypatch.setenv("CUDA_HOME", "")  # set but empty: not a folder to look in
    assert tools.find_nvcc() == str(other)


def test_a_tool_named_by_its_variable_is_the_only_answer(
    bare: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrong $KERNELWATCH_NCU is reported as no ncu, never replaced by another one."""
    executable(bare / "ncu")
    monkeypatch.setenv("KERNELWATCH_NCU", str(tmp_path / "missing" / "ncu"))
    assert tools.find_ncu() is None
    chosen = executable(tmp_path / "chosen" / "ncu")
    monkeypatch.setenv("KERNELWATCH_NCU", str(chosen))
    assert tools.find_ncu() == str(chosen)


def test_the_path_comes_before_the_install_folders(bare: Path, tmp_path: Path) -> None:
    executable(tmp_path / "opt" / "2025.3.1" / "ncu")
    on_path = executable(bare / "ncu")
    assert tools.find_tool("ncu", "KERNELWATCH_NCU", [str(tmp_path / "opt" / "*" / "ncu")]) == (
        str(on_path)
    )


def test_the_newest_executable_install_is_taken(bare: Path, tmp_path: Path) -> None:
    pattern = str(tmp_path / "nsight-compute" / "*" / "ncu")
    executable(tmp_path / "nsight-compute" / "2024.1.0" / "ncu")
    newest = executable(tmp_path / "nsight-compute" / "2025.3.1" / "ncu")
    assert tools.find_tool("ncu", "KERNELWATCH_NCU", [pattern]) == str(newest)
    newest.chmod(0o644)  # a newer folder whose ncu cannot run: the next one
    assert tools.find_tool("ncu", "KERNELWATCH_NCU", [pattern]) == str(
        tmp_path / "nsight-compute" / "2024.1.0" / "ncu"
    )
    assert tools.find_tool("ncu", "KERNELWATCH_NCU", [str(tmp_path / "none" / "ncu")]) is None


def test_versions_are_compared_as_numbers(bare: Path, tmp_path: Path) -> None:
    """2025.10 is newer than 2025.9, which sorts after it as text."""
    pattern = str(tmp_path / "nsight-compute" / "*" / "ncu")
    executable(tmp_path / "nsight-compute" / "2025.9.0" / "ncu")
    newest = executable(tmp_path / "nsight-compute" / "2025.10.0" / "ncu")
    assert tools.find_tool("ncu", "KERNELWATCH_NCU", [pattern]) == str(newest)

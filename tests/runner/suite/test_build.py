"""runner.suite.build: a suite's build and what it says of its kernels. Each command of
`[suite] build` run in the suite's folder with its placeholders expanded, the first that fails
or runs past its time ending the build (its log says which and why); per-kernel resources read
from the build's build.json, else from ptxas's `-v` report in the log (the last report of a
kernel wins); and the environment of the build and its workers: the compilers that run inside a
workload's `prepare` (Triton, Inductor, PyTorch extensions, the driver's PTX JIT) keep what they
compiled in the runner's build cache, kept between commits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runner.run.pipeline import RunRequest, execute
from runner.suite.build import (
    COMPILE_CACHES,
    LOG_TAIL,
    BuildOutcome,
    build_env,
    parse_ptxas,
    run_build,
)
from runner.suite.load import Suite
from tests.runner.gitrepo import commit_all, cpu_suite_repo

# In the form of `nvcc -Xptxas -v` for two architectures: gemm is reported for each of them
PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4gemmPKfS0_Pfi' for 'sm_80'
ptxas info    : Function properties for _Z4gemmPKfS0_Pfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 16384 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_Z4reluPf' for 'sm_90a'
ptxas info    : Function properties for _Z4reluPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 364 bytes cmem[0]
ptxas info    : Compiling entry function '_Z4gemmPKfS0_Pfi' for 'sm_90a'
ptxas info    : Function properties for _Z4gemmPKfS0_Pfi
    48 bytes stack frame, 40 bytes spill stores, 44 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 32768 bytes smem, 380 bytes cmem[0]
"""


def suite(root: Path, *build: str) -> Suite:
    return Suite(root=root, name="s", workloads="kernels", device="cpu", build=build)


def test_ptxas_gives_each_kernels_resources_its_last_report_winning() -> None:
    assert parse_ptxas(PTXAS) == [
        {
            "kernel": "_Z4gemmPKfS0_Pfi",
            "arch": "sm_90a",
            "registers": 255,
            "shared_bytes": 32768,
            "spill_stores_bytes": 40,
            "spill_loads_bytes": 44,
        },
        {
            "kernel": "_Z4reluPf",
            "arch": "sm_90a",
            "registers": 8,
            "shared_bytes": 0,
            "spill_stores_bytes": 0,
            "spill_loads_bytes": 0,
        },
    ]


def test_ptxas_lines_before_any_entry_function_are_no_kernel() -> None:
    assert parse_ptxas("ptxas info    : Used 32 registers, 1024 bytes smem\n") == []
    assert parse_ptxas("") == []


def test_the_commands_run_in_the_suites_folder_with_their_placeholders_expanded(
    tmp_path: Path,
) -> None:
    (tmp_path / "kernels.py").write_text("NAME = 'from the suite'\n")
    show = (
        "import os, sys, kernels; print(os.getcwd(), sys.argv[1], kernels.NAME, "
        "os.environ['KERNELWATCH_BUILD_DIR'])"
    )
    build = tmp_path / "out" / "build"
    done = run_build(
        suite(tmp_path, f'{{python}} -c "{show}" {{build_dir}}/a.o', 'echo "root={root}"'), build
    )
    assert done.status == "ok" and build.is_dir()
    assert f"{tmp_path} {build}/a.o from the suite {build}" in done.log_tail
    assert f"$ {sys.executable} -c" in done.log_tail  # each command logged as run
    assert f"root={tmp_path}" in done.log_tail
    assert done.kernels == []


def test_the_first_failing_command_ends_the_build_with_its_exit_code(tmp_path: Path) -> None:
    done = run_build(
        suite(tmp_path, "echo compiling", "echo 'error: no nvcc' >&2; exit 3", "echo never"),
        tmp_path / "build",
    )
    assert done.status == "failed"
    assert done.log_tail.splitlines() == [
        "$ echo compiling",
        "compiling",
        "",
        "$ echo 'error: no nvcc' >&2; exit 3",
        "error: no nvcc",
        "",
        "exit code 3",
    ]


def test_a_command_past_its_time_ends_the_build(tmp_path: Path) -> None:
    done = run_build(suite(tmp_path, "echo started; exec sleep 30"), tmp_path / "b", timeout=1)
    assert done.status == "failed" and done.seconds < 10
    assert done.log_tail.splitlines()[1:] == ["timed out after 1 s", "started"]


def test_a_long_log_keeps_its_end(tmp_path: Path) -> None:
    done = run_build(
        suite(tmp_path, f"{{python}} -c \"print('x' * {2 * LOG_TAIL}, 'end')\""), tmp_path / "build"
    )
    assert len(done.log_tail) == LOG_TAIL and done.log_tail.endswith("x end\n")


@pytest.mark.parametrize(
    "declared",
    [
        {"kernels": [{"kernel": "gemm", "arch": "sm_90", "registers": 96, "notes": "x"}]},
        [{"kernel": "gemm", "arch": "sm_90", "registers": 96, "shared_bytes": None}],
        {"kernels": {"gemm": {"arch": "sm_90", "registers": 96}}},
        {"gemm": {"arch": "sm_90", "registers": 96}},
    ],
    ids=["list-under-kernels", "bare-list", "by-name-under-kernels", "bare-by-name"],
)
def test_a_builds_own_build_json_wins_over_ptxas(tmp_path: Path, declared: object) -> None:
    """Unknown keys and empty values are left out."""
    write = f"import json; json.dump({declared!r}, open('{{build_dir}}/build.json', 'w'))"
    done = run_build(
        suite(tmp_path, f'{{python}} -c "{write}"', f"cat <<'EOF'\n{PTXAS}EOF"), tmp_path / "build"
    )
    assert done.kernels == [{"kernel": "gemm", "arch": "sm_90", "registers": 96}]


def test_an_unreadable_build_json_falls_back_on_ptxas_and_says_so(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (build / "build.json").write_text("{not json")
    done = run_build(suite(tmp_path, f"cat <<'EOF'\n{PTXAS}EOF"), build)
    assert done.status == "ok"
    assert [k["kernel"] for k in done.kernels] == ["_Z4gemmPKfS0_Pfi", "_Z4reluPf"]
    assert "\nbuild.json unreadable (Expecting property name" in done.log_tail
    assert done.log_tail.endswith("; using the ptxas report in the log")


def test_the_documents_build_section_rounds_the_seconds() -> None:
    outcome = BuildOutcome("ok", 12.345678, "log", [{"kernel": "k"}])
    assert outcome.to_document() == {
        "status": "ok",
        "seconds": 12.346,
        "log_tail": "log",
        "kernels": [{"kernel": "k"}],
    }
    assert json.loads(json.dumps(BuildOutcome("failed", 1.0, "").to_document()))["kernels"] == []


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

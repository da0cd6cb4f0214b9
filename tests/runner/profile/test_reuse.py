"""runner.profile.reuse: a workload's ncu section comes back only while everything its launches
depend on is unchanged; real git commits, build folders of ELF/fatbin/data files, no GPU."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runner.profile import reuse as profile_reuse
from runner.profile.reuse import (
    BuildOutputs,
    Found,
    ProfileReuse,
    dependencies,
    merge,
    search_name,
)

ENV = {"fingerprint": "f1", "driver_version": "580.1", "ncu_version": "2025.3.1",
       "gpu": {"uuid": "GPU-1"}, "host": {"python": "3.12.3"}}  # fmt: skip
CONFIG = {"metrics": ["a", "b"], "sections": ["SpeedOfLight"], "launches": 16}
INFO = {"id": "transpose[n=4096]", "name": "transpose", "params": {"n": 4096}}
SECTION = {"status": "ok", "reason": "", "kernels": [
    {"kernel": "transpose_tiled", "metrics": {"dram__bytes.sum": {"value": 1.0, "unit": "byte"}},
     "findings": []}]}  # fmt: skip


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def commit(repo: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "c")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def cubin(*names: str, salt: str = "") -> bytes:
    """An ELF file whose string table holds `names`, as a cubin's does."""
    return b"\x7fELF\x02\x01" + b"\0".join(n.encode() for n in names) + salt.encode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    commit(path, {"suite/workloads.py": "N = 4096\n", "cuda/transpose.cu": "// v1\n",
                  "cuda/gemm.cu": "// v1\n", "README.md": "hi\n"})  # fmt: skip
    return path


def build(tmp_path: Path, files: dict[str, bytes]) -> Path:
    out = tmp_path / "build"
    if out.exists():
        for old in out.iterdir():
            old.unlink()
    out.mkdir(exist_ok=True)
    for name, content in files.items():
        (out / name).write_bytes(content)
    return out


def first_build(tmp_path: Path) -> Path:
    return build(tmp_path, {"transpose.cubin": cubin("transpose_tiled"),
                            "gemm.cubin": cubin("gemm_fwd", "gemm_bwd"),
                            "build.json": b'{"compile_s": 1.5}'})  # fmt: skip


def reuse(tmp_path: Path, repo: Path, out: Path, env=ENV, config=CONFIG) -> ProfileReuse:
    return ProfileReuse(tmp_path / "cache", repo, out, "c" * 40, env, config)


def whole(found: Found | None) -> bool:
    """A section reused as it is: nothing its launches depend on changed."""
    return found is not None and found.stale == ()


def stale(*kernels: str) -> Found:
    """What lookup gives where the code of `kernels` (all of SECTION's) changed since commit c."""
    return Found(SECTION, kernels, "c" * 40)


def stored(tmp_path: Path, repo: Path, section=SECTION) -> Path:
    out = first_build(tmp_path)
    reuse(tmp_path, repo, out).store(INFO, section)
    return out


def test_an_unchanged_workload_gets_its_section_back_saying_where_from(
    tmp_path: Path, repo: Path
) -> None:
    out = stored(tmp_path, repo)
    got = reuse(tmp_path, repo, out).lookup(INFO)
    assert got is not None and got.stale == () and got.section["kernels"] == SECTION["kernels"]
    assert got.section["reason"].startswith("reused: profiled at commit cccccccccccc")
    assert reuse(tmp_path, repo, out).lookup({**INFO, "params": {"n": 2048}}) is None


def test_a_change_to_its_own_kernels_code_profiles_again_and_others_do_not(
    tmp_path: Path, repo: Path
) -> None:
    stored(tmp_path, repo)
    # gemm.cu changed: its cubin differs, the transpose workload's does not
    commit(repo, {"cuda/gemm.cu": "// v2\n"})
    out = build(tmp_path, {"transpose.cubin": cubin("transpose_tiled"),
                           "gemm.cubin": cubin("gemm_fwd", "gemm_bwd", salt="v2"),
                           "build.json": b'{"compile_s": 1.7}'})  # fmt: skip
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    commit(repo, {"cuda/transpose.cu": "// v2\n"})
    out = build(tmp_path, {"transpose.cubin": cubin("transpose_tiled", salt="v2"),
                           "gemm.cubin": cubin("gemm_fwd", "gemm_bwd", salt="v2")})  # fmt: skip
    assert reuse(tmp_path, repo, out).lookup(INFO) == stale("transpose_tiled")


@pytest.mark.parametrize(
    ("path", "text"),
    [("suite/workloads.py", "N = 2048\n"), ("NOTES.txt", "changed\n"), ("data/x.bin", "1")],
)
def test_any_change_outside_native_sources_profiles_again(
    tmp_path: Path, repo: Path, path: str, text: str
) -> None:
    out = stored(tmp_path, repo)
    commit(repo, {path: text})
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


@pytest.mark.parametrize("path", ["README.md", "docs/img/trend.png", "docs/design.rst"])
def test_a_document_or_picture_changing_keeps_every_section(
    tmp_path: Path, repo: Path, path: str
) -> None:
    out = stored(tmp_path, repo)
    commit(repo, {path: "new words\n"})
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))


def test_a_native_source_change_that_leaves_the_build_alone_is_reused(
    tmp_path: Path, repo: Path
) -> None:
    out = stored(tmp_path, repo)
    commit(repo, {"cuda/transpose.cu": "// a comment only\n"})
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({**ENV, "driver_version": "580.2"}, CONFIG),
        ({**ENV, "gpu": {"uuid": "GPU-2"}}, CONFIG),
        ({**ENV, "ncu_version": "2026.1"}, CONFIG),
        (ENV, {**CONFIG, "sections": []}),
    ],
)
def test_another_host_stack_or_profile_configuration_profiles_again(
    tmp_path: Path, repo: Path, env: dict, config: dict
) -> None:
    out = stored(tmp_path, repo)
    assert reuse(tmp_path, repo, out, env, config).lookup(INFO) is None


def test_data_in_the_build_counts_and_the_build_report_does_not(tmp_path: Path, repo: Path) -> None:
    out = stored(tmp_path, repo)
    (out / "build.json").write_text('{"compile_s": 9.9}')
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    (out / "table.bin").write_bytes(b"\x01\x02")
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


SECTION_LIBRARY = "void cublasLt::splitKreduce_kernel<32, 16>(cublasLt::Params<T6>, const T4 *)"


def test_a_library_kernel_ignores_the_cubins_but_not_a_fatbin(tmp_path: Path, repo: Path) -> None:
    section = {**SECTION, "kernels": [{**SECTION["kernels"][0], "kernel": SECTION_LIBRARY}]}
    out = stored(tmp_path, repo, section)
    (out / "transpose.cubin").write_bytes(cubin("transpose_tiled", salt="v3"))
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    (out / "extra.fatbin").write_bytes(b"\x50\xed\x55\xba" + b"compressed")
    assert reuse(tmp_path, repo, out).lookup(INFO).stale == (SECTION_LIBRARY,)  # type: ignore[union-attr]


def test_a_kernel_compiled_at_run_time_from_a_source_depends_on_the_sources(
    tmp_path: Path, repo: Path
) -> None:
    commit(repo, {"cuda/jit.cu": 'extern "C" __global__ void jit_scale(float* x) {}\n'})
    section = {**SECTION, "kernels": [{**SECTION["kernels"][0], "kernel": "jit_scale"}]}
    out = stored(tmp_path, repo, section)
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    commit(repo, {"cuda/jit.cu": 'extern "C" __global__ void jit_scale(float* y) {}\n'})
    assert reuse(tmp_path, repo, out).lookup(INFO).stale == ("jit_scale",)  # type: ignore[union-attr]


def test_only_complete_sections_are_kept_and_torn_files_are_never_trusted(
    tmp_path: Path, repo: Path
) -> None:
    out = first_build(tmp_path)
    kept = reuse(tmp_path, repo, out)
    kept.store(INFO, {"status": "failed", "reason": "x", "kernels": []})
    kept.store(INFO, {"status": "ok", "reason": "", "kernels": []})
    assert not (tmp_path / "cache").exists()
    kept.store(INFO, SECTION)
    (entry,) = (tmp_path / "cache" / "ncu-profiles").glob("*/*.json")
    entry.write_text(entry.read_text()[:40])
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


def test_prune_removes_the_least_recently_used(tmp_path: Path, repo: Path) -> None:
    out = first_build(tmp_path)
    kept = reuse(tmp_path, repo, out)
    infos = [{**INFO, "id": f"w{i}"} for i in range(4)]
    for i, info in enumerate(infos):  # stored one after the other, a second apart
        kept.store(info, SECTION)
        (entry,) = kept._folder(info).glob("*.json")
        os.utime(entry, (1000 + i, 1000 + i))
    assert whole(kept.lookup(infos[0]))  # used now: the most recent
    assert kept.prune(keep=2) == 2
    assert whole(kept.lookup(infos[0])) and whole(kept.lookup(infos[3]))
    assert kept.lookup(infos[1]) is None and kept.lookup(infos[2]) is None


@pytest.mark.parametrize(
    ("printed", "identifier"),
    [("gemm_fwd_relu", "gemm_fwd_relu"),
     ("void ns::gemm<128, (int)2>(float *, const float *)", "gemm"),
     ("void cublasLt::splitKreduce_kernel<32, 16>(cublasLt::Params<T6>)", "splitKreduce_kernel")],
)  # fmt: skip
def test_the_identifier_searched_for_in_code(printed: str, identifier: str) -> None:
    assert search_name(printed) == identifier


def test_outputs_are_sorted_by_kind(tmp_path: Path) -> None:
    out = build(tmp_path, {"a.cubin": cubin("k"), "b.ptx": b".version 8.0\n.target sm_90\nk",
                           "c.fatbin": b"\x50\xed\x55\xba..", "d.bin": b"1",
                           "build.json": b"{}"})  # fmt: skip
    outputs = BuildOutputs(out)
    assert sorted(outputs.code) == ["a.cubin", "b.ptx"]
    assert list(outputs.opaque) == ["c.fatbin"] and list(outputs.data) == ["d.bin"]
    assert set(dependencies(["k"], outputs, {})) == {"build/a.cubin", "build/b.ptx", "build/d.bin"}


def test_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert profile_reuse.enabled()
    monkeypatch.setenv(profile_reuse.REUSE_ENV, "0")
    assert not profile_reuse.enabled()


def test_another_kernel_of_the_same_cubin_changing_keeps_the_section(
    tmp_path: Path, repo: Path
) -> None:
    real = Path(__file__).parents[1] / "fixtures" / "cubin"
    section = {**SECTION, "kernels": [{**SECTION["kernels"][0], "kernel": "ka"}]}
    out = build(tmp_path, {"t.cubin": (real / "two_kernels.cubin").read_bytes()})
    reuse(tmp_path, repo, out).store(INFO, section)
    out = build(tmp_path, {"t.cubin": (real / "kb_changed.cubin").read_bytes()})
    found = reuse(tmp_path, repo, out).lookup(INFO)
    assert found is not None and found.stale == ()
    out = build(tmp_path, {"t.cubin": (real / "constant_grown.cubin").read_bytes()})
    assert reuse(tmp_path, repo, out).lookup(INFO) == Found(section, ("ka",), "c" * 40)


def kernel(name: str, value: float) -> dict:
    return {"kernel": name, "metrics": {"dram__bytes.sum": {"value": value, "unit": "byte"}},
            "findings": []}  # fmt: skip


TWO = {"status": "ok", "reason": "", "kernels": [kernel("ka", 1.0), kernel("kb", 2.0)]}


def test_a_workload_of_two_kernels_where_one_changed_names_that_one_stale(
    tmp_path: Path, repo: Path
) -> None:
    real = Path(__file__).parents[1] / "fixtures" / "cubin"
    out = build(tmp_path, {"t.cubin": (real / "two_kernels.cubin").read_bytes()})
    reuse(tmp_path, repo, out).store(INFO, TWO)
    out = build(tmp_path, {"t.cubin": (real / "kb_changed.cubin").read_bytes()})
    found = reuse(tmp_path, repo, out).lookup(INFO)
    assert found is not None and found.stale == ("kb",) and found.commit == "c" * 40
    assert found.section["kernels"] == TWO["kernels"]
    # a __constant__ both kernels read: both changed, both are profiled again
    out = build(tmp_path, {"t.cubin": (real / "constant_grown.cubin").read_bytes()})
    assert reuse(tmp_path, repo, out).lookup(INFO) == Found(TWO, ("ka", "kb"), "c" * 40)
    # data in the build changed (the Python side may read it: which kernels run may differ)
    out = build(tmp_path, {"t.cubin": (real / "kb_changed.cubin").read_bytes(), "w.bin": b"1"})
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


def test_kernels_in_two_outputs_and_a_library_kernel(tmp_path: Path, repo: Path) -> None:
    section = {**TWO, "kernels": [kernel("transpose_tiled", 1.0), kernel("gemm_fwd", 2.0),
                                  kernel("void cutlass::Kernel<8>(Params)", 3.0)]}  # fmt: skip
    out = first_build(tmp_path)
    reuse(tmp_path, repo, out).store(INFO, section)
    commit(repo, {"cuda/gemm.cu": "// v2\n"})
    out = build(tmp_path, {"transpose.cubin": cubin("transpose_tiled"),
                           "gemm.cubin": cubin("gemm_fwd", "gemm_bwd", salt="v2")})  # fmt: skip
    found = reuse(tmp_path, repo, out).lookup(INFO)
    assert found is not None and found.stale == ("gemm_fwd",)


def test_an_entry_kept_without_each_kernels_dependencies_is_reused_whole_or_not_at_all(
    tmp_path: Path, repo: Path
) -> None:
    real = Path(__file__).parents[1] / "fixtures" / "cubin"
    out = build(tmp_path, {"t.cubin": (real / "two_kernels.cubin").read_bytes()})
    kept = reuse(tmp_path, repo, out)
    kept.store(INFO, TWO)
    (entry,) = kept._folder(INFO).glob("*.json")
    old = json.loads(entry.read_text())
    del old["kernel_dependencies"]
    entry.write_text(json.dumps(old))
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    out = build(tmp_path, {"t.cubin": (real / "kb_changed.cubin").read_bytes()})
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


def test_merge_takes_the_changed_kernels_from_the_fresh_pass() -> None:
    found = Found(TWO, ("kb",), "d" * 40)
    fresh = {"status": "ok", "reason": "", "kernels": [kernel("kb", 5.0)]}
    merged = merge(found, fresh)
    # The kept kernel says which commit measured it (the fresh one is stamped by the pass).
    kept = {**kernel("ka", 1.0), "profiled_at": "d" * 40}
    assert merged is not None and merged["kernels"] == [kept, kernel("kb", 5.0)]
    assert merged["reason"] == ("profiled at this commit: kb (code changed); 1 other kernel "
                                "reused from commit dddddddddddd (code unchanged)")  # fmt: skip
    assert merge(found, {"status": "ok", "reason": "", "kernels": [kernel("ka", 9.0)]}) is None
    assert merge(found, {"status": "failed", "reason": "x", "kernels": []}) is None


def test_python_the_worker_never_imported_is_no_dependency(tmp_path: Path, repo: Path) -> None:
    out = first_build(tmp_path)
    reuse(tmp_path, repo, out).store(INFO, SECTION, imported=["suite/workloads.py"])
    commit(repo, {"service/app.py": "APP = 1\n", "tests/test_x.py": "def test(): pass\n"})
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))  # the service's code and tests
    commit(repo, {"service/app.py": "APP = 2\n"})
    assert whole(reuse(tmp_path, repo, out).lookup(INFO))
    for path, text in (("data/table.json", "[1]\n"), ("suite/workloads.py", "N = 2048\n")):
        changed = tmp_path / f"changed-{path.replace('/', '-')}"
        subprocess.run(["git", "clone", "-q", str(repo), str(changed)], check=True)
        commit(changed, {path: text})  # a data file added, or the imported Python changed
        assert reuse(tmp_path, changed, out).lookup(INFO) is None, path


def test_without_the_workers_imports_every_python_file_counts(tmp_path: Path, repo: Path) -> None:
    out = stored(tmp_path, repo)  # imported: None
    commit(repo, {"service/app.py": "APP = 1\n"})
    assert reuse(tmp_path, repo, out).lookup(INFO) is None


# A GPU host's environment as runner.host.environment collects it: every tool named.
TOOLS = {**ENV, "cuda_runtime_version": "12.8", "cupy_version": "13.4.1",
         "nvcc_version": "12.8.93"}  # fmt: skip
SIGNATURE = {"kernels": [{"kernel": "transpose_tiled", "grid": [64, 64, 1]}],
             "code": {"transpose_tiled": "c1"}, "inputs": {}, "written": {}, "scalars": {},
             "launch_code": "l1"}  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cuda_runtime_version", "12.9"),
        ("cupy_version", "13.5.0"),
        ("nvcc_version", "12.9.41"),
        ("host", {"python": "3.13.1"}),
    ],
    ids=["cuda_runtime", "cupy", "nvcc", "python"],
)
def test_another_cuda_runtime_cupy_nvcc_or_python_version_profiles_again(
    tmp_path: Path, repo: Path, key: str, value: object
) -> None:
    """A tool upgrade can change the counters of unchanged code: its sections are not reused."""
    out = first_build(tmp_path)
    reuse(tmp_path, repo, out, TOOLS).store(INFO, SECTION, None, SIGNATURE)
    same = reuse(tmp_path, repo, out, TOOLS)
    assert whole(same.lookup(INFO)) and same.lookup_launch(INFO, SIGNATURE) is not None
    # The fingerprint stays as it was: the key must name each tool itself, not lean on it.
    upgraded = reuse(tmp_path, repo, out, {**TOOLS, key: value})
    assert upgraded.lookup(INFO) is None
    assert upgraded.lookup_launch(INFO, SIGNATURE) is None

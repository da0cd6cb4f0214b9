"""runner.profile.launch_key through runner.profile.reuse: a section comes back for a launch
whose signature is unchanged whatever files a commit touched, and never once any element of the
key changed (real git commits and build folders; signatures as a check worker writes them)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runner.profile import launch_key
from runner.profile.reuse import ProfileReuse

ENV = {"fingerprint": "f1", "driver_version": "580.1", "ncu_version": "2025.3.1",
       "gpu": {"uuid": "GPU-1"}, "host": {"python": "3.12.3"}}  # fmt: skip
CONFIG = {"metrics": ["a"], "sections": ["SpeedOfLight"], "launches": 16}
INFO = {"id": "softmax[rows=4096]", "name": "softmax", "params": {"rows": 4096}}
SECTION = {"status": "ok", "reason": "", "kernels": [
    {"kernel": "softmax_kernel", "metrics": {"inst": {"value": 1.0, "unit": ""}}, "findings": []},
    {"kernel": "void scale<4>(float *, int)", "metrics": {}, "findings": []}]}  # fmt: skip
SIGNATURE = {
    "kernels": [
        {"kernel": "softmax_kernel", "grid": [4096, 1, 1], "block": [64, 1, 1],
         "dynamic_shared": 0, "static_shared": 0, "registers": 26},
        {"kernel": "_Z5scaleILi4EEvPfi", "grid": [128, 1, 1], "block": [256, 1, 1],
         "dynamic_shared": 0, "static_shared": 0, "registers": 16},
    ],
    "code": {"softmax_kernel": "c1", "_Z5scaleILi4EEvPfi": "c2"},
    "inputs": {"x": {"shape": [4096, 1024], "dtype": "float32", "sha256": "d1"}},
    "written": {"out": {"shape": [4096, 1024], "dtype": "float32"}},
    "scalars": {"eps": "1e-05"},
    "launch_code": "l1",
}  # fmt: skip


def commit(repo: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).write_text(text)
    for args in (
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "c"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (tmp_path / "build").mkdir()
    return path


def reuse_at(tmp_path: Path, repo: Path, sha: str, env: dict[str, Any] = ENV) -> ProfileReuse:
    return ProfileReuse(tmp_path / "cache", repo, tmp_path / "build", sha, env, CONFIG)


def stored_then_refactored(tmp_path: Path, repo: Path) -> ProfileReuse:
    """The section stored at a first commit; a reuse at a second commit that rewrote the Python
    every workload imports (the commit's files no longer match)."""
    first = commit(repo, {"kernels.py": "import triton\n", "README.md": "v1\n"})
    reuse_at(tmp_path, repo, first).store(INFO, SECTION, None, SIGNATURE)
    second = commit(repo, {"kernels.py": "import triton  # refactored\nX = 1\n"})
    return reuse_at(tmp_path, repo, second)


def test_a_python_refactor_keeps_every_launch_whose_signature_is_unchanged(
    tmp_path: Path, repo: Path
) -> None:
    later = stored_then_refactored(tmp_path, repo)
    assert later.lookup(INFO) is None  # by the commit's files: profiled again
    found = later.lookup_launch(INFO, copy.deepcopy(SIGNATURE))
    assert found is not None and not found.stale
    assert found.section["kernels"] == SECTION["kernels"]
    assert found.section["reason"].startswith(f"reused: profiled at commit {found.commit[:12]}")


def changed(part: str) -> dict[str, Any]:
    signature = copy.deepcopy(SIGNATURE)
    if part == "kernels.grid":
        signature["kernels"][0]["grid"] = [2048, 1, 1]
    elif part == "kernels.block":
        signature["kernels"][1]["block"] = [128, 1, 1]
    elif part == "kernels.shared":
        signature["kernels"][0]["dynamic_shared"] = 4096
    elif part == "kernels.order":
        signature["kernels"].reverse()
    elif part == "kernels.added":
        signature["kernels"].append(dict(signature["kernels"][1]))
    elif part == "code":
        signature["code"]["_Z5scaleILi4EEvPfi"] = "c2-changed"
    elif part == "inputs.checksum":
        signature["inputs"]["x"]["sha256"] = "d2"
    elif part == "inputs.shape":
        signature["inputs"]["x"]["shape"] = [2048, 1024]
    elif part == "inputs.dtype":
        signature["inputs"]["x"]["dtype"] = "float16"
    elif part == "written":
        signature["written"]["out"]["shape"] = [4096, 2048]
    elif part == "scalars":
        signature["scalars"]["eps"] = "1e-06"
    elif part == "launch_code":
        signature["launch_code"] = "l2"
    return signature


WORDS = {"kernels.grid": "the kernels launched or their launch configuration",
         "kernels.block": "the kernels launched or their launch configuration",
         "kernels.shared": "the kernels launched or their launch configuration",
         "kernels.order": "the kernels launched or their launch configuration",
         "kernels.added": "the kernels launched or their launch configuration",
         "code": "a kernel's compiled code", "inputs.checksum": "the inputs",
         "inputs.shape": "the inputs", "inputs.dtype": "the inputs",
         "written": "the shapes of what the launch writes", "scalars": "the instance's scalars",
         "launch_code": "the code of launch()"}  # fmt: skip


@pytest.mark.parametrize("part", sorted(WORDS))
def test_any_element_of_the_key_changed_profiles_the_launch_again(
    tmp_path: Path, repo: Path, part: str
) -> None:
    later = stored_then_refactored(tmp_path, repo)
    now = changed(part)
    assert later.lookup_launch(INFO, now) is None
    assert later.why_profiled(INFO, now) == [WORDS[part]]


def test_another_host_tool_or_section_set_or_workload_is_another_key(
    tmp_path: Path, repo: Path
) -> None:
    sha = commit(repo, {"kernels.py": "x\n"})
    reuse_at(tmp_path, repo, sha).store(INFO, SECTION, None, SIGNATURE)
    for key, value in (("driver_version", "590.2"), ("ncu_version", "2026.1"),
                       ("gpu", {"uuid": "GPU-2"})):  # fmt: skip
        assert reuse_at(tmp_path, repo, sha, {**ENV, key: value}).lookup_launch(
            INFO, SIGNATURE) is None, key  # fmt: skip
    sections = ProfileReuse(tmp_path / "cache", repo, tmp_path / "build", sha, ENV,
                            {**CONFIG, "sections": ["SpeedOfLight", "Occupancy"]})  # fmt: skip
    assert sections.lookup_launch(INFO, SIGNATURE) is None
    other = {**INFO, "id": "softmax[rows=2048]", "params": {"rows": 2048}}
    assert reuse_at(tmp_path, repo, sha).lookup_launch(other, SIGNATURE) is None
    assert reuse_at(tmp_path, repo, sha).lookup_launch(INFO, SIGNATURE) is not None


def test_no_signature_no_reuse_by_launch_and_no_entry_written(tmp_path: Path, repo: Path) -> None:
    sha = commit(repo, {"kernels.py": "x\n"})
    reuse = reuse_at(tmp_path, repo, sha)
    unavailable = {"unavailable": "no CUPTI recorder (ModuleNotFoundError: cupti)"}
    reuse.store(INFO, SECTION, None, unavailable)
    assert not (tmp_path / "cache" / "ncu-profiles" / "launch").exists()
    assert reuse.lookup_launch(INFO, unavailable) is None
    assert reuse.lookup_launch(INFO, None) is None
    assert reuse.lookup(INFO) is not None  # by the commit's files, as before


def test_a_torn_entry_is_never_trusted(tmp_path: Path, repo: Path) -> None:
    sha = commit(repo, {"kernels.py": "x\n"})
    reuse = reuse_at(tmp_path, repo, sha)
    reuse.store(INFO, SECTION, None, SIGNATURE)
    (entry,) = (tmp_path / "cache" / "ncu-profiles" / "launch").glob("*.json")
    entry.write_text(entry.read_text()[:40])
    assert reuse.lookup_launch(INFO, SIGNATURE) is None


def test_determinants_follow_the_signature_not_the_files(tmp_path: Path, repo: Path) -> None:
    first = commit(repo, {"kernels.py": "v1\n"})
    at = {first: reuse_at(tmp_path, repo, first)}  # each reads the files of HEAD as it is
    second = commit(repo, {"kernels.py": "v2\n"})
    at[second] = reuse_at(tmp_path, repo, second)

    def determinants(sha: str, signature: Any) -> list[str]:
        stamped = at[sha].stamp(INFO, copy.deepcopy(SECTION), sha, signature)
        return [k["determinants"] for k in stamped["kernels"]]

    assert determinants(first, SIGNATURE) == determinants(second, SIGNATURE)
    assert determinants(first, None) != determinants(second, None)  # by the files: they moved
    assert determinants(second, changed("inputs.checksum")) != determinants(second, SIGNATURE)
    a, b = determinants(second, SIGNATURE)
    assert a != b  # each kernel's own code named apart (ncu's demangled name found mangled)
    info, signature = INFO, SIGNATURE
    context = at[second].context
    assert b == launch_key.kernel_key(context, info, signature, "scale")
    assert launch_key.kernel_key(context, info, signature, "scale") != launch_key.kernel_key(
        context, info, signature, "unknown")  # fmt: skip

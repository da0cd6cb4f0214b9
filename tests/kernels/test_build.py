"""The CUDA sources compile with nvcc for sm_90 (skipped only when nvcc is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernels import build

NVCC = build.find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found")


def test_every_source_declares_kernels():
    srcs = build.sources()
    assert {s.name for s in srcs} >= {"gemm.cu", "adamw.cu", "dropout.cu", "loss.cu"}
    for s in srcs:
        assert build.kernel_names(s), s.name


def test_normalize_arch():
    assert build.normalize_arch("sm_90") == "sm_90"
    assert build.normalize_arch(90) == "sm_90"
    assert build.normalize_arch("9.0") == "sm_90"
    assert build.normalize_arch("compute_90a") == "sm_90a"
    with pytest.raises(ValueError):
        build.normalize_arch("hopper")


def test_nvcc_command():
    cmd = build.nvcc_command("nvcc", Path("a.cu"), Path("out/a.cubin"), "90", ("X=1",))
    assert cmd[0] == "nvcc" and cmd[-1] == "a.cu"
    for flag in ("-cubin", "-O3", "-Xptxas", "-v", "-arch=sm_90", "-DX=1"):
        assert flag in cmd
    assert cmd[cmd.index("-o") + 1] == str(Path("out/a.cubin"))


def test_nvrtc_source_is_self_contained():
    for s in build.sources():
        text = build.inline_includes(s)
        assert '#include "' not in text
        assert "#pragma once" not in text
    assert "philox4x32_10" in build.inline_includes(build.CUDA_DIR / "gemm.cu")


@needs_nvcc
def test_every_source_compiles_for_sm90(tmp_path):
    result = build.build(tmp_path, arch="sm_90")
    assert result.compiler == "nvcc" and result.arch == "sm_90"
    assert set(result.cubins) == {s.name for s in build.sources()}
    for path in result.cubins.values():
        assert Path(path).stat().st_size > 0
    declared = {n for s in build.sources() for n in build.kernel_names(s)}
    assert set(result.kernels) == declared
    for k in result.kernels.values():
        assert k.registers > 0, k
        assert k.spill_store_bytes >= 0 and k.spill_load_bytes >= 0
        assert k.compile_s > 0
    gemm = result.kernels["gemm_bias_act_fwd"]
    assert gemm.shared_bytes >= 2 * 2 * 8 * 128 * 4  # two double-buffered 128x8 tiles
    assert "-Xptxas -v" in result.log
    assert result.to_dict()["kernels"]["adamw_multi"]["source"] == "adamw.cu"


@needs_nvcc
def test_compile_error_is_reported(tmp_path, monkeypatch):
    bad = tmp_path / "src"
    bad.mkdir()
    (bad / "broken.cu").write_text('extern "C" __global__ void broken() { nope; }\n')
    monkeypatch.setattr(build, "CUDA_DIR", bad)
    with pytest.raises(build.BuildError) as err:
        build.build(tmp_path / "out", arch="sm_90")
    assert "nope" in err.value.log


@needs_nvcc
def test_a_cached_build_compiles_only_what_changed(tmp_path):
    cache = tmp_path / "cache"
    first = build.build(tmp_path / "a", arch="sm_90", cache=cache, only=("transpose.cu",))
    again = build.build(tmp_path / "b", arch="sm_90", cache=cache, only=("transpose.cu",))
    assert "# cached" not in first.log and "# cached" in again.log
    assert Path(again.cubins["transpose.cu"]).read_bytes() == Path(
        first.cubins["transpose.cu"]).read_bytes()  # fmt: skip
    assert again.kernels == first.kernels  # the same ptxas report, the first compile's seconds
    other = build.build(tmp_path / "c", arch="sm_90", cache=cache, only=("transpose.cu",),
                        defines=("KW_TEST=1",))  # fmt: skip
    assert "# cached" not in other.log


def test_the_cache_key_follows_every_input():
    src = build.CUDA_DIR / "gemm.cu"
    key = build.cache_key(src, "V13.0.88", "sm_90", ())
    assert key == build.cache_key(src, "V13.0.88", "90", ())
    assert key != build.cache_key(src, "V13.0.99", "sm_90", ())
    assert key != build.cache_key(src, "V13.0.88", "sm_100", ())
    assert key != build.cache_key(src, "V13.0.88", "sm_90", ("X=1",))
    assert key != build.cache_key(build.CUDA_DIR / "gemm_tf32.cu", "V13.0.88", "sm_90", ())


def test_the_cache_keeps_the_most_recently_used(tmp_path):
    import os

    for i in range(5):
        entry = tmp_path / f"k{i}"
        entry.mkdir()
        os.utime(entry, (1000 + i, 1000 + i))
    os.utime(tmp_path / "k0", (2000, 2000))  # used again lately
    (tmp_path / ".k9-tmp").mkdir()  # a build still writing its entry
    assert build.prune(tmp_path, keep=2) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [".k9-tmp", "k0", "k4"]


@pytest.mark.parametrize(
    ("answer", "code", "arch"),
    [("9.0\n9.0\n", 0, "sm_90"), ("9.0\n8.0\n", 0, None), ("", 0, None), ("9.0\n", 9, None),
     ("[N/A]\n", 0, None)],
)  # fmt: skip
def test_the_arch_from_nvidia_smi_only_where_every_gpu_agrees(tmp_path, answer, code, arch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\nprintf '{answer}'\nexit {code}\n")
    fake.chmod(0o755)
    assert build.smi_arch(str(fake)) == arch
    assert build.smi_arch(str(tmp_path / "absent")) is None

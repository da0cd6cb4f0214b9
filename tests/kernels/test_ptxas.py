"""The ptxas -v parser on reports captured from nvcc 13.0 (-arch=sm_90)."""

from __future__ import annotations

from pathlib import Path

from kernels.ptxas import parse_ptxas

DATA = Path(__file__).parent / "data"


def test_suite_report():
    stats = parse_ptxas((DATA / "ptxas_v_sm90_nvcc13.txt").read_text())
    assert set(stats) == {
        "gemm_bwd_nt_dinput",
        "gemm_bwd_tn_dweight",
        "gemm_bias_act_fwd",
        "adamw_multi",
    }
    tn = stats["gemm_bwd_tn_dweight"]
    assert (tn.arch, tn.registers, tn.shared_bytes, tn.barriers) == ("sm_90", 128, 20992, 1)
    assert (tn.stack_bytes, tn.spill_store_bytes, tn.spill_load_bytes) == (24, 20, 20)
    assert tn.ptxas_ms == 157.393
    nt = stats["gemm_bwd_nt_dinput"]
    assert (nt.registers, nt.shared_bytes, nt.spill_store_bytes) == (128, 16896, 0)
    adamw = stats["adamw_multi"]
    assert (adamw.registers, adamw.shared_bytes, adamw.barriers) == (45, 0, 0)
    assert adamw.ptxas_ms == 167.487


def test_device_functions_are_not_kernels():
    stats = parse_ptxas((DATA / "ptxas_v_noinline_sm90_nvcc13.txt").read_text())
    assert set(stats) == {"k", "k2"}
    assert stats["k"].registers == 8
    assert stats["k2"].spill_store_bytes == 0


def test_older_format_with_cmem():
    text = (
        "ptxas info    : Compiling entry function 'foo' for 'sm_80'\n"
        "ptxas info    : Function properties for foo\n"
        "    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 64 registers, 1024 bytes smem, 380 bytes cmem[0], 8 bytes cmem[2]\n"
    )
    foo = parse_ptxas(text)["foo"]
    assert (foo.registers, foo.shared_bytes, foo.constant_bytes) == (64, 1024, 388)
    assert (foo.stack_bytes, foo.spill_store_bytes, foo.spill_load_bytes) == (16, 4, 8)
    assert foo.ptxas_ms is None


def test_empty_report():
    assert parse_ptxas("") == {}

"""FLOP and byte formulas (CPU only)."""

from __future__ import annotations

from kernels import counts
from kernels.workloads import TRAIN_SMALL


def test_gemm_counts():
    assert counts.gemm_flops(4096, 4096, 4096) == 2 * 4096**3
    assert counts.gemm_bytes(2, 3, 4) == 4 * (8 + 12 + 6)
    assert counts.gemm_fwd_flops(2, 3, 4) == 48 + 12
    assert counts.gemm_fwd_bytes(2, 3, 4, save_z=False) == 4 * (8 + 12 + 3 + 6)
    assert counts.gemm_fwd_bytes(2, 3, 4) == 4 * (8 + 12 + 3 + 12)
    assert counts.gemm_bwd_flops(2, 3, 4) == 2 * 48 + 12
    # read A, B, gY, Z; write gA, gB, gBias; gZ written and read back
    assert counts.gemm_bwd_bytes(2, 3, 4) == 4 * ((8 + 12 + 12) + (8 + 12 + 3) + 12)


def test_memory_counts():
    assert counts.adamw_bytes(10) == 7 * 4 * 10
    assert counts.elementwise_bytes(10, reads=1, writes=1) == 80


def test_train_step_counts_are_dominated_by_gemms():
    b, i, h, o = TRAIN_SMALL
    gemms = 2 * b * (2 * i * h + 3 * h * o)
    flops = counts.mlp_train_step_flops(b, i, h, o)
    assert gemms < flops < 1.02 * gemms
    params = i * h + h + h * o + o
    assert counts.mlp_train_step_bytes(b, i, h, o) > counts.adamw_bytes(params)

"""kernels/ops.py on the CPU: what the launch wrappers decide before any launch. Dropout's
arguments as the kernels take them (a 24-bit threshold, the 1 / (1 - p) scale, the seed), the
split-K plan of the fp32 forward GEMM (a function of the shape alone: split only where 128 x 128
tiles leave most of an H100 idle and K is long; every split non-empty, chunks a multiple of 8),
the kernels each plan launches, and the refusals of dimensions that are no positive multiple of 4,
of operands that are not C-contiguous float32 and of an output of the wrong shape. The launches
themselves, AdamWGroup and MSELoss need CuPy and a GPU (tests/kernels/test_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels import ops
from kernels.reference import ACT_CODES

F32 = np.float32


def test_dropout_arguments_are_threshold_scale_and_seed_in_the_kernels_types() -> None:
    thr, scale, seed = ops.dropout_args(0.1, 2**63 - 1)
    assert (thr.dtype, scale.dtype, seed.dtype) == (np.uint32, np.float32, np.uint64)
    assert int(thr) == 1677722  # ceil(0.1 * 2^24)
    assert scale == np.float32(1 / 0.9) and int(seed) == 2**63 - 1


def test_p_zero_turns_dropout_off() -> None:
    thr, scale, _ = ops.dropout_args(0.0, 5)
    assert int(thr) == 0 and scale == 1.0  # every 24-bit draw is >= 0: all kept, unscaled


@pytest.mark.parametrize("p", [1.0, -0.1])
def test_a_dropout_probability_outside_zero_to_one_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        ops.dropout_args(p, 0)


def test_grids_of_96_tiles_or_more_never_split() -> None:
    assert ops.gemm_fwd_splits(1024, 1536, 16384) == 1  # 8 x 12 = 96 tiles
    assert ops.gemm_fwd_splits(640, 2432, 1024) == 2  # 5 x 19 = 95 tiles


def test_a_k_under_1024_never_splits() -> None:
    assert ops.gemm_fwd_splits(128, 128, 1020) == 1
    assert ops.gemm_fwd_splits(128, 128, 1024) == 2  # K // 512 bounds the splits


def test_splits_aim_at_two_blocks_a_multiprocessor_and_stop_at_16() -> None:
    # One tile over K = 16384: min(16, ceil(2 * 132 / 1), 16384 // 512 = 32) = 16.
    assert ops.gemm_fwd_splits(128, 128, 16384) == 16
    # 2 x 3 tiles over K = 8192: ceil(264 / 6) = 44, K // 512 = 16: 16.
    assert ops.gemm_fwd_splits(256, 384, 8192) == 16
    # 8 x 8 = 64 tiles: ceil(264 / 64) = 5.
    assert ops.gemm_fwd_splits(1024, 1024, 8192) == 5


def test_every_split_is_non_empty_and_its_chunk_a_multiple_of_8() -> None:
    for m, n in ((4, 4), (132, 260), (640, 2432), (1024, 1024)):
        for k in range(4, 12_000, 52):
            splits, kchunk = ops._split_plan(m, n, k)
            if splits == 1:
                assert kchunk == k
                continue
            assert kchunk % 8 == 0 and 2 <= splits <= 16, (m, n, k)
            assert (splits - 1) * kchunk < k <= splits * kchunk, (m, n, k)


def test_a_ragged_k_is_split_in_chunks_that_cover_it() -> None:
    # 2 x 3 tiles, K = 1052 (no multiple of 8): two splits of 528 (test_gpu.py launches it).
    assert ops._split_plan(132, 260, 1052) == (2, 528)


def test_the_kernels_launched_follow_the_plan() -> None:
    assert ops.gemm_fwd_kernels(1024, 1536, 4096) == ("gemm_bias_act_fwd",)
    assert ops.gemm_fwd_kernels(128, 128, 4096) == (
        "gemm_fwd_splitk_partial",
        "gemm_splitk_epilogue",
    )
    # Tensor cores never split K.
    assert ops.gemm_fwd_kernels(128, 128, 4096, tf32=True) == ("gemm_tf32_bias_act_fwd",)


def test_no_workspace_and_no_cupy_where_k_is_not_split() -> None:
    assert ops.gemm_fwd_workspace(1024, 1536, 4096) is None


@pytest.mark.parametrize("dims", [(6, 8, 8), (8, 10, 8), (8, 0, 8), (8, 8, 0)])
def test_gemm_dimensions_must_be_positive_multiples_of_4(dims: tuple[int, int, int]) -> None:
    m, n, k = dims
    a, b, y = np.zeros((m, k), F32), np.zeros((k, n), F32), np.zeros((m, n), F32)
    # Refused before the library is touched: there is none here.
    with pytest.raises(ValueError, match="positive multiples of 4"):
        ops.gemm_fwd(None, a, b, None, y)


def test_a_float64_or_strided_operand_is_refused() -> None:
    y = np.zeros((8, 8), F32)
    b = np.zeros((8, 8), F32)
    for a in (np.zeros((8, 8)), np.zeros((8, 16), F32)[:, ::2]):
        with pytest.raises(ValueError, match="a: want a C-contiguous float32 array"):
            ops.gemm_fwd(None, a, b, None, y)


def test_a_transpose_into_an_output_of_the_wrong_shape_is_refused() -> None:
    x = np.zeros((2, 3), F32)
    with pytest.raises(ValueError, match=r"out: want shape \(3, 2\), got \(2, 3\)"):
        ops.transpose(None, x, np.zeros((2, 3), F32))


def test_activation_codes_are_the_references_and_unknown_names_are_refused() -> None:
    assert {name: int(ops._act(name)) for name in ACT_CODES} == ACT_CODES
    assert ops._act("gelu").dtype == np.int32
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        ops._act("swish")

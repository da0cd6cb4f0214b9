"""Launch wrappers of the suite's kernels: shape checks, grid sizes, argument types.

Arrays are CuPy float32, C-contiguous, 2-D for the GEMMs; every launch is asynchronous on the
current stream. Every GEMM dimension must be a multiple of 4 (the kernels move float4s).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels.philox import dropout_threshold
from kernels.reference import ACT_CODES

GEMM_TILE = 128
GEMM_THREADS = 256
NULL = np.uint64(0)
H100_SMS = 132
SPLIT_K_MIN_BLOCKS = 96


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _check(arr: Any, shape: tuple[int, ...], name: str) -> Any:
    if arr.dtype != np.float32 or not arr.flags.c_contiguous:
        raise ValueError(f"{name}: want a C-contiguous float32 array, got {arr.dtype}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name}: want shape {shape}, got {tuple(arr.shape)}")
    if arr.data.ptr % 16:
        raise ValueError(f"{name}: not 16-byte aligned")
    return arr


def _opt(arr: Any, shape: tuple[int, ...], name: str) -> Any:
    return NULL if arr is None else _check(arr, shape, name)


def _dims4(**dims: int) -> None:
    bad = {k: v for k, v in dims.items() if v % 4 or v <= 0}
    if bad:
        raise ValueError(f"GEMM dimensions must be positive multiples of 4: {bad}")


def _act(name: str) -> np.int32:
    if name not in ACT_CODES:
        raise ValueError(f"unknown activation {name!r}")
    return np.int32(ACT_CODES[name])


def dropout_args(p: float, seed: int) -> tuple[np.uint32, np.float32, np.uint64]:
    """(threshold, scale, seed) as the kernels take them; p = 0 turns dropout off."""
    thr = dropout_threshold(p)
    return np.uint32(thr), np.float32(1.0 / (1.0 - p)), np.uint64(seed)


def gemm_fwd_splits(m: int, n: int, k: int) -> int:
    """K splits of the fp32 forward GEMM: 1 unless its 128x128 tiles would leave most of an
    H100's 132 multiprocessors idle and K is long (a function of the shape alone, so that a
    workload's kernels do not depend on the machine)."""
    return _split_plan(m, n, k)[0]


def _split_plan(m: int, n: int, k: int) -> tuple[int, int]:
    """(splits, kchunk): kchunk a multiple of 8, every split non-empty."""
    blocks = _cdiv(m, GEMM_TILE) * _cdiv(n, GEMM_TILE)
    if blocks >= SPLIT_K_MIN_BLOCKS or k < 1024:
        return 1, k
    splits = max(1, min(16, _cdiv(2 * H100_SMS, blocks), k // 512))
    kchunk = _cdiv(_cdiv(k, splits), 8) * 8
    return _cdiv(k, kchunk), kchunk


def gemm_fwd_workspace(m: int, n: int, k: int) -> Any:
    """The split-K workspace ``gemm_fwd`` needs at this shape, or None."""
    splits = gemm_fwd_splits(m, n, k)
    if splits == 1:
        return None
    import cupy

    return cupy.empty((splits, m, n), dtype=cupy.float32)


def gemm_fwd_kernels(m: int, n: int, k: int, tf32: bool = False) -> tuple[str, ...]:
    """The kernels ``gemm_fwd`` launches for this shape, primary first."""
    if tf32:
        return ("gemm_tf32_bias_act_fwd",)
    if gemm_fwd_splits(m, n, k) > 1:
        return ("gemm_fwd_splitk_partial", "gemm_splitk_epilogue")
    return ("gemm_bias_act_fwd",)


def gemm_fwd(
    lib, a, b, bias, y, z=None, act="none", p_drop=0.0, seed=0, tf32=False, workspace=None
) -> None:
    """y = dropout(act(a @ b + bias)); z = a @ b + bias when given (tf32: tensor cores).

    Small grids split K (see ``gemm_fwd_splits``) into ``workspace`` (splits x m x n float32;
    taken from CuPy's pool when not given)."""
    m, k = a.shape
    n = b.shape[1]
    _dims4(m=m, n=n, k=k)
    _check(a, (m, k), "a"), _check(b, (k, n), "b"), _check(y, (m, n), "y")
    outs = (_opt(bias, (n,), "bias"), y, _opt(z, (m, n), "z"))
    tail = (_act(act), *dropout_args(p_drop, seed))
    grid = (_cdiv(n, GEMM_TILE), _cdiv(m, GEMM_TILE))
    splits, kchunk = (1, k) if tf32 else _split_plan(m, n, k)
    if splits == 1:
        kernel = "gemm_tf32_bias_act_fwd" if tf32 else "gemm_bias_act_fwd"
        dims = (np.int32(m), np.int32(n), np.int32(k))
        lib[kernel](grid, (GEMM_THREADS,), (a, b, *outs, *dims, *tail))
        return
    if workspace is None:
        workspace = gemm_fwd_workspace(m, n, k)
    _check(workspace, (splits, m, n), "workspace")
    dims = (np.int32(m), np.int32(n), np.int32(k), np.int32(kchunk))
    lib["gemm_fwd_splitk_partial"]((*grid, splits), (GEMM_THREADS,), (a, b, workspace, *dims))
    blocks = min(_cdiv(m * n // 4, 256), 8 * H100_SMS)
    args = (workspace, np.int32(splits), *outs, np.int32(m), np.int32(n), *tail)
    lib["gemm_splitk_epilogue"]((blocks,), (256,), args)


def gemm_bwd_weight(lib, a, gy, z, gw, gz=None, gbias=None, act="none") -> None:
    """gw = a.T @ (gy * act'(z)); also gz = gy * act'(z) and gbias = gz.sum(0) when given."""
    m, k = a.shape
    n = gy.shape[1]
    _dims4(m=m, n=n, k=k)
    _check(a, (m, k), "a"), _check(gy, (m, n), "gy"), _check(gw, (k, n), "gw")
    if act != "none" and z is None:
        raise ValueError(f"act={act!r} needs the pre-activation z")
    args = (a, gy, _opt(z, (m, n), "z"), gw, _opt(gz, (m, n), "gz"), _opt(gbias, (n,), "gbias"))
    grid = (_cdiv(n, GEMM_TILE), _cdiv(k, GEMM_TILE))
    lib["gemm_bwd_tn_dweight"](
        grid, (GEMM_THREADS,), (*args, np.int32(m), np.int32(n), np.int32(k), _act(act))
    )


def gemm_bwd_input(lib, gz, b, ga, zprev=None, act_prev="none", p_drop=0.0, seed=0) -> None:
    """ga = gz @ b.T, times dropout mask(seed) and act_prev'(zprev) when asked."""
    m, n = gz.shape
    k = b.shape[0]
    _dims4(m=m, n=n, k=k)
    _check(gz, (m, n), "gz"), _check(b, (k, n), "b"), _check(ga, (m, k), "ga")
    if act_prev != "none" and zprev is None:
        raise ValueError(f"act_prev={act_prev!r} needs zprev")
    args = (gz, b, ga, _opt(zprev, (m, k), "zprev"), np.int32(m), np.int32(n), np.int32(k))
    grid = (_cdiv(k, GEMM_TILE), _cdiv(m, GEMM_TILE))
    lib["gemm_bwd_nt_dinput"](
        grid, (GEMM_THREADS,), (*args, _act(act_prev), *dropout_args(p_drop, seed))
    )


class AdamWGroup:
    """A list of (param, grad, exp_avg, exp_avg_sq) float32 tensors updated in one launch."""

    CHUNK = 4096  # elements per block, as ADAMW_CHUNK in adamw.cu

    def __init__(self, params, grads, exp_avg, exp_avg_sq):
        import cupy

        lists = (params, grads, exp_avg, exp_avg_sq)
        if len({len(x) for x in lists}) != 1 or not params:
            raise ValueError("params, grads and moments must be non-empty lists of equal length")
        for i, group in enumerate(zip(*lists, strict=True)):
            for name, arr in zip(("param", "grad", "exp_avg", "exp_avg_sq"), group, strict=True):
                _check(arr, group[0].shape, f"{name}[{i}]")
        self.tensors = lists  # keeps the arrays alive
        sizes = [int(p.size) for p in params]
        blocks = np.cumsum([0] + [_cdiv(s, self.CHUNK) for s in sizes])
        self.grid = int(blocks[-1])
        self.ptrs = [cupy.asarray([a.data.ptr for a in x], dtype=cupy.uint64) for x in lists]
        self.sizes = cupy.asarray(sizes, dtype=cupy.int64)
        self.block_start = cupy.asarray(blocks, dtype=cupy.int32)
        self.numel = sum(sizes)

    def step(self, lib, *, lr, beta1, beta2, eps, weight_decay, step) -> None:
        bc1, bc2 = 1.0 - beta1**step, 1.0 - beta2**step
        scalars = (beta1, beta2, eps, 1.0 - lr * weight_decay, lr / bc1, 1.0 / math.sqrt(bc2))
        args = (*self.ptrs, self.sizes, self.block_start, np.int32(len(self.tensors[0])))
        lib["adamw_multi"]((self.grid,), (256,), (*args, *(np.float32(s) for s in scalars)))


class MSELoss:
    """loss = mean((y - t)^2) and gy = 2 (y - t) / n in one launch (scratch kept here)."""

    THREADS = 256

    def __init__(self, numel: int, max_blocks: int = 1024):
        import cupy

        if numel % 4:
            raise ValueError("MSE needs a multiple of 4 elements")
        self.numel = numel
        self.blocks = max(1, min(max_blocks, _cdiv(numel // 4, self.THREADS)))
        self.partials = cupy.zeros(self.blocks, dtype=cupy.float64)
        self.ticket = cupy.zeros(1, dtype=cupy.uint32)

    def __call__(self, lib, y, t, gy, loss) -> None:
        for name, arr in (("y", y), ("t", t), ("gy", gy)):
            _check(arr, y.shape, name)
        if y.size != self.numel:
            raise ValueError(f"MSELoss built for {self.numel} elements, got {y.size}")
        args = (y, t, gy, _check(loss, (1,), "loss"), self.partials, self.ticket)
        lib["mse_loss_grad"]((self.blocks,), (self.THREADS,), (*args, np.int64(self.numel)))


def dropout(lib, x, y, p: float, seed: int) -> None:
    """y = x * keep / (1 - p) with the Philox mask of (seed, flat index)."""
    _check(x, x.shape, "x"), _check(y, x.shape, "y")
    groups = _cdiv(x.size, 4)
    blocks = max(1, min(_cdiv(groups, 256), 132 * 16))
    lib["dropout_fwd"]((blocks,), (256,), (x, y, np.int64(x.size), *dropout_args(p, seed)))


def transpose(lib, x, out) -> None:
    """out = x.T for a 2-D float32 x."""
    rows, cols = x.shape
    _check(out, (cols, rows), "out")
    grid = (_cdiv(cols, 32), _cdiv(rows, 32))
    lib["transpose_tiled"](grid, (32, 8), (x, out, np.int32(rows), np.int32(cols)))

"""A Triton layer norm over fp32 rows, one program a row. REDO_PERCENT is the history's ~4%
change: that share of the rows is normalised a second time by extra programs (as a grid
rounded up too far does), the same values written again, so the output stays right and the
kernel moves ~4% more bytes."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

REDO_PERCENT = 0


@triton.jit
def rownorm_kernel(x, y, rows, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0) % rows
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(v, axis=0) / cols
    d = tl.where(mask, v - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    tl.store(y + row * cols + offs, d / tl.sqrt(var + eps), mask=mask)


def rownorm(x: torch.Tensor, y: torch.Tensor) -> None:
    rows, cols = x.shape
    grid = (rows + rows * REDO_PERCENT // 100,)
    rownorm_kernel[grid](x, y, rows, cols, 1e-5, BLOCK=triton.next_power_of_2(cols),
                         num_warps=8)  # fmt: skip

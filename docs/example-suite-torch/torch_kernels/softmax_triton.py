"""A row softmax in Triton, autotuned over the warps a row gets (imported only by `prepare`:
listing the suite needs neither torch nor Triton)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8)],
    key=["n_cols"],
)
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + offsets, e / tl.sum(e, axis=0), mask=mask)


def softmax(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out

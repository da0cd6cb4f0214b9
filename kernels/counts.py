"""FLOP and byte counts of the suite's workloads (pure functions of the shapes).

Conventions: a multiply-add is 2 FLOPs; a GEMM of M x K by K x N is 2 M N K; elementwise work
counts one FLOP per operation of the formula as written (bias add, activation, ...), which is
noise next to the GEMMs. Bytes are the compulsory traffic: every input read once, every output
written once (fp32: 4 bytes an element); a scratch buffer that a fused kernel writes and a later
kernel reads back counts on both sides. A multi-kernel workload sums its kernels.
"""

from __future__ import annotations

F32 = 4


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of one M x K by K x N product."""
    return 2 * m * n * k


def gemm_bytes(m: int, n: int, k: int, itemsize: int = F32) -> int:
    """Read A and B once, write C once."""
    return itemsize * (m * k + k * n + m * n)


def gemm_fwd_flops(m: int, n: int, k: int) -> int:
    """Y = act(A.B + bias): the product, the bias add and the activation."""
    return gemm_flops(m, n, k) + 2 * m * n


def gemm_fwd_bytes(m: int, n: int, k: int, save_z: bool = True, itemsize: int = F32) -> int:
    """Read A, B, bias; write Y (and the pre-activation Z when saved)."""
    outputs = 2 if save_z else 1
    return itemsize * (m * k + k * n + n + outputs * m * n)


def gemm_bwd_flops(m: int, n: int, k: int) -> int:
    """gZ = gY * act'(Z), gA = gZ.B^T, gB = A^T.gZ, gBias = column sums of gZ."""
    return 2 * gemm_flops(m, n, k) + 2 * m * n


def gemm_bwd_bytes(m: int, n: int, k: int, itemsize: int = F32) -> int:
    """Read A, B, gY, Z; write gA, gB, gBias; gZ written once and read back by the gA GEMM."""
    inputs = m * k + k * n + 2 * m * n
    outputs = m * k + k * n + n
    scratch = 2 * m * n
    return itemsize * (inputs + outputs + scratch)


def adamw_flops(numel: int) -> int:
    """About 12 operations an element (decay, two moments, the step)."""
    return 12 * numel


def adamw_bytes(numel: int, itemsize: int = F32) -> int:
    """Read parameter, gradient and both moments; write parameter and both moments."""
    return 7 * itemsize * numel


def elementwise_bytes(numel: int, reads: int, writes: int, itemsize: int = F32) -> int:
    return itemsize * numel * (reads + writes)


def mse_flops(numel: int) -> int:
    """Difference, square, sum, gradient scale."""
    return 4 * numel


def mlp_train_step_flops(batch: int, d_in: int, d_hidden: int, d_out: int) -> int:
    """Forward, backward (no input gradient) and AdamW of Linear-GELU-dropout-Linear with MSE.

    GEMMs: X.W1, D.W2, D^T.gY, gY.W2^T, X^T.gZ1, i.e. 2 B (2 I H + 3 H O).
    """
    b, i, h, o = batch, d_in, d_hidden, d_out
    gemms = gemm_flops(b, h, i) + 3 * gemm_flops(b, o, h) + gemm_flops(i, h, b)
    forward = 3 * b * h + b * o  # bias, GELU, dropout; bias
    backward = b * o + b * h + 2 * b * h  # bias sums; gZ1 = gD * mask * GELU'(Z1)
    elementwise = forward + mse_flops(b * o) + backward
    params = i * h + h + h * o + o
    return gemms + elementwise + adamw_flops(params)


def mlp_train_step_bytes(batch: int, d_in: int, d_hidden: int, d_out: int) -> int:
    """Sum of the compulsory traffic of the step's seven kernels (fp32)."""
    b, i, h, o = batch, d_in, d_hidden, d_out
    fwd1 = b * i + i * h + h + 2 * b * h  # X, W1, b1 -> Z1, D
    fwd2 = b * h + h * o + o + b * o  # D, W2, b2 -> Y
    loss = 3 * b * o  # Y, T -> gY
    dw2 = b * h + b * o + h * o + o  # D, gY -> gW2, gb2
    dd = b * o + h * o + b * h + b * h  # gY, W2, Z1 -> gZ1
    dw1 = b * i + b * h + i * h + h  # X, gZ1 -> gW1, gb1
    words = fwd1 + fwd2 + loss + dw2 + dd + dw1
    return F32 * words + adamw_bytes(i * h + h + h * o + o)

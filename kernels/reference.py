"""Float64 references: the same maths as the kernels, written as plain array code.

Every function takes ``xp`` (``numpy`` by default, or ``cupy`` for the big shapes: the same
float64 formulas evaluated on the GPU) and expects float64 arrays. GELU is the tanh
approximation, as in kernels/cuda/act.cuh.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels.philox import dropout_keep

ACTIVATIONS = ("none", "relu", "leaky_relu", "sigmoid", "tanh", "gelu")
ACT_CODES = {name: code for code, name in enumerate(ACTIVATIONS)}  # as in act.cuh
LEAKY_RELU_SLOPE = 0.01
GELU_C = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715


def act(z, name: str, xp: Any = np):
    """The activation ``name`` applied elementwise."""
    if name == "none":
        return z
    if name == "relu":
        return xp.where(z > 0, z, 0.0)
    if name == "leaky_relu":
        return xp.where(z > 0, z, LEAKY_RELU_SLOPE * z)
    if name == "sigmoid":
        return 1.0 / (1.0 + xp.exp(-z))
    if name == "tanh":
        return xp.tanh(z)
    if name == "gelu":
        return 0.5 * z * (1.0 + xp.tanh(GELU_C * (z + GELU_A * z**3)))
    raise ValueError(f"unknown activation {name!r}; one of {ACTIVATIONS}")


def act_grad(z, name: str, xp: Any = np):
    """d act(z) / dz, elementwise (the derivative of ReLU at 0 is taken as 0)."""
    if name == "none":
        return xp.ones_like(z)
    if name == "relu":
        return xp.where(z > 0, 1.0, 0.0)
    if name == "leaky_relu":
        return xp.where(z > 0, 1.0, LEAKY_RELU_SLOPE)
    if name == "sigmoid":
        s = 1.0 / (1.0 + xp.exp(-z))
        return s * (1.0 - s)
    if name == "tanh":
        return 1.0 - xp.tanh(z) ** 2
    if name == "gelu":
        t = xp.tanh(GELU_C * (z + GELU_A * z**3))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * z * z)
    raise ValueError(f"unknown activation {name!r}; one of {ACTIVATIONS}")


def gemm_fwd(a, b, bias, name: str, xp: Any = np) -> dict:
    """Z = A.B + bias, Y = act(Z)."""
    z = a @ b + bias
    return {"y": act(z, name, xp), "z": z}


def gemm_bwd(a, b, z, gy, name: str, xp: Any = np) -> dict:
    """Gradients of Y = act(A.B + bias) given gY and the saved pre-activation Z."""
    gz = gy * act_grad(z, name, xp)
    return {"ga": gz @ b.T, "gb": a.T @ gz, "gbias": gz.sum(axis=0)}


def dropout_mask(shape: tuple[int, ...], p: float, seed: int, xp: Any = np):
    """Float64 multiplier of dropout: keep / (1 - p), or 0 (see kernels/philox.py)."""
    keep = dropout_keep(math.prod(shape), p, seed, xp).reshape(shape)
    return keep * (1.0 / (1.0 - p))


# The optimizer's settings every AdamW workload of the suite steps with (its own and the
# training step's).
ADAMW = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "step": 10}


def adamw(p, g, m, v, *, lr, beta1, beta2, eps, weight_decay, step):
    """One AdamW step (torch.optim.AdamW semantics); returns the new (p, m, v)."""
    p = p * (1.0 - lr * weight_decay)
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    bc1 = 1.0 - beta1**step
    bc2 = 1.0 - beta2**step
    p = p - (lr / bc1) * m / (v**0.5 / math.sqrt(bc2) + eps)
    return p, m, v


def mse(y, t) -> tuple[Any, Any]:
    """loss = mean((y - t)^2) and its gradient with respect to y."""
    d = y - t
    return (d * d).mean(), 2.0 * d / d.size


def mlp_train_step(x, t, w1, b1, w2, b2, state: dict, *, p_drop, seed, opt: dict, xp: Any = np):
    """Linear -> GELU -> dropout -> Linear -> MSE, backward, AdamW on (w1, b1, w2, b2).

    ``state`` maps each parameter name to its (m, v); ``opt`` holds lr, beta1, beta2, eps,
    weight_decay and step. Returns the forward values, the gradients and the updated parameters
    and moments.
    """
    z1 = x @ w1 + b1
    mask = dropout_mask(z1.shape, p_drop, seed, xp)
    d = act(z1, "gelu", xp) * mask
    y = d @ w2 + b2
    loss, gy = mse(y, t)
    grads = {"w2": d.T @ gy, "b2": gy.sum(axis=0)}
    gz1 = (gy @ w2.T) * mask * act_grad(z1, "gelu", xp)
    grads["w1"] = x.T @ gz1
    grads["b1"] = gz1.sum(axis=0)
    out = {"loss": xp.asarray([loss]), "y": y, "z1": z1}
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    for name, p in params.items():
        m, v = state[name]
        new_p, new_m, new_v = adamw(p, grads[name], m, v, **opt)
        out[f"g{name}"] = grads[name]
        out[f"delta_{name}"] = new_p - p
        out[f"m_{name}"] = new_m
        out[f"v_{name}"] = new_v
    return out

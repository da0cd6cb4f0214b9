"""A workload's outputs and references as float64 NumPy arrays, whatever holds them.

`fetch()` and `reference()` may return NumPy arrays (or anything NumPy reads), CuPy arrays, or
PyTorch tensors on any device and of any dtype: a suite written in PyTorch computes its reference
with torch too. Tensors are detached and widened to float64 before they are copied to the host
(bfloat16 and the float8 types have no NumPy dtype); nothing here imports torch or CuPy."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_host(value: Any) -> np.ndarray:
    if callable(getattr(value, "detach", None)) and callable(getattr(value, "double", None)):
        return np.asarray(value.detach().double().cpu().numpy(), dtype=np.float64)  # a tensor
    if type(value).__module__.split(".")[0] == "cupy":
        return np.asarray(value.get(), dtype=np.float64)
    return np.asarray(value, dtype=np.float64)

"""GEMM workloads: the suite's forward and backward kernels, and cuBLAS as the baseline."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import counts, ops, reference
from kernels.workload import Instance, Workload, draws


def gemm_inputs(m: int, n: int, k: int, seed: int, backward: bool, xp: Any = np) -> dict[str, Any]:
    """A ~ N(0, 1), B ~ N(0, 1/K) (so A.B ~ N(0, 1)), bias ~ N(0, 0.01); Z, gY ~ N(0, 1).
    Host draws for ``xp`` = NumPy, device draws for CuPy (kernels.workload.draws)."""
    d = draws(seed, xp)
    out = {"a": d.normal((m, k)), "b": d.normal((k, n), 1.0 / np.sqrt(k))}
    if backward:
        out["z"] = d.normal((m, n))
        out["gy"] = d.normal((m, n))
    else:
        out["bias"] = d.normal(n, 0.1)
    return out


class _Gemm(Workload):
    def __init__(self, m: int, n: int, k: int, *, tags: tuple[str, ...] = (), **extra: Any):
        super().__init__(tags=tags, m=m, n=n, k=k, **extra)
        self.m, self.n, self.k = m, n, k


class GemmFwd(_Gemm):
    """Y = act(A.B + bias) with the pre-activation Z saved (as a training forward does)."""

    name = "gemm_fwd"
    outputs = ("y", "z")

    def __init__(self, m: int, n: int, k: int, act: str, *, tags: tuple[str, ...] = ()):
        if act not in reference.ACTIVATIONS:
            raise ValueError(f"unknown activation {act!r}")
        super().__init__(m, n, k, act=act, tags=tags)
        self.act = act

    @property
    def kernels(self) -> tuple[str, ...]:  # type: ignore[override]
        """One kernel, or the split-K pair on grids too small for the GPU."""
        return ops.gemm_fwd_kernels(self.m, self.n, self.k, tf32=self.precision == "tf32")

    @property
    def flops(self) -> int:
        return counts.gemm_fwd_flops(self.m, self.n, self.k)

    @property
    def bytes(self) -> int:
        return counts.gemm_fwd_bytes(self.m, self.n, self.k, save_z=True)

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        return gemm_inputs(self.m, self.n, self.k, seed, backward=False, xp=xp)

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        return reference.gemm_fwd(inputs["a"], inputs["b"], inputs["bias"], self.act, xp)

    def instance(self, inputs, library) -> Instance:
        return _GemmFwdInstance(self, inputs, library)


class GemmFwdTF32(GemmFwd):
    """The forward GEMM on tensor cores (operands rounded to TF32, fp32 accumulation)."""

    name = "gemm_fwd_tf32"
    precision = "tf32"


class _GemmFwdInstance(Instance):
    def setup(self) -> None:
        w = self.workload
        self.out = {"y": self.empty(w.m, w.n), "z": self.empty(w.m, w.n)}
        self.tf32 = w.precision == "tf32"
        self.work = None if self.tf32 else ops.gemm_fwd_workspace(w.m, w.n, w.k)
        if self.work is not None:
            self.scratch["work"] = self.work

    def launch(self) -> None:
        d, o, act = self.dev, self.out, self.workload.act
        args = (self.lib, d["a"], d["b"], d["bias"], o["y"], o["z"], act)
        ops.gemm_fwd(*args, tf32=self.tf32, workspace=self.work)


class GemmBwd(_Gemm):
    """gZ = gY * act'(Z) (fused in the gB GEMM's tile loads), gB = A^T.gZ, gBias = sum_rows gZ,
    then gA = gZ.B^T; operands read transposed in the tile loads, no transpose kernel."""

    name = "gemm_bwd"
    kernels = ("gemm_bwd_tn_dweight", "gemm_bwd_nt_dinput")
    outputs = ("ga", "gb", "gbias")

    def __init__(self, m: int, n: int, k: int, act: str, *, tags: tuple[str, ...] = ()):
        if act not in reference.ACTIVATIONS:
            raise ValueError(f"unknown activation {act!r}")
        super().__init__(m, n, k, act=act, tags=tags)
        self.act = act

    @property
    def flops(self) -> int:
        return counts.gemm_bwd_flops(self.m, self.n, self.k)

    @property
    def bytes(self) -> int:
        return counts.gemm_bwd_bytes(self.m, self.n, self.k)

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        return gemm_inputs(self.m, self.n, self.k, seed, backward=True, xp=xp)

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        i = inputs
        return reference.gemm_bwd(i["a"], i["b"], i["z"], i["gy"], self.act, xp)

    def instance(self, inputs, library) -> Instance:
        return _GemmBwdInstance(self, inputs, library)


class _GemmBwdInstance(Instance):
    def setup(self) -> None:
        w = self.workload
        self.out = {
            "ga": self.empty(w.m, w.k),
            "gb": self.empty(w.k, w.n),
            "gbias": self.empty(w.n),
        }
        self.scratch = {"gz": self.empty(w.m, w.n)}

    def launch(self) -> None:
        d, o, gz = self.dev, self.out, self.scratch["gz"]
        act = self.workload.act
        ops.gemm_bwd_weight(self.lib, d["a"], d["gy"], d["z"], o["gb"], gz, o["gbias"], act)
        ops.gemm_bwd_input(self.lib, gz, d["b"], o["ga"])


class CublasGemm(_Gemm):
    """C = A.B through ``cupy.matmul`` (cuBLAS SGEMM, no TF32): the library baseline."""

    name = "cublas_gemm"
    kernels = ()
    outputs = ("c",)

    @property
    def flops(self) -> int:
        return counts.gemm_flops(self.m, self.n, self.k)

    @property
    def bytes(self) -> int:
        return counts.gemm_bytes(self.m, self.n, self.k)

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        inputs = gemm_inputs(self.m, self.n, self.k, seed, backward=False, xp=xp)
        del inputs["bias"]
        return inputs

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        return {"c": inputs["a"] @ inputs["b"]}

    def instance(self, inputs, library) -> Instance:
        return _CublasInstance(self, inputs, library)


class _CublasInstance(Instance):
    def setup(self) -> None:
        w = self.workload
        self.out = {"c": self.empty(w.m, w.n)}

    def launch(self) -> None:
        self.cp.matmul(self.dev["a"], self.dev["b"], out=self.out["c"])

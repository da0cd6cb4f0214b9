"""Workloads of benchmarks/knobs_gpu.py's suite (issue 47): a Triton `tl.dot` matmul, a Triton
row norm, a torch.compile'd block and torch's softmax, each with the knob the history turns
(knobs_kernels/*.py). torch and Triton are imported only when a workload is prepared, so that
`kernelwatch-runner list` works without them. Every launch takes 50 us or more on an H100, the
size the stability bar of issue 47 speaks of."""

from __future__ import annotations

import importlib
from typing import Any


class Workload:
    timing_method = "cuda_events"

    def __init__(self, name: str, params: dict[str, int], kernels: tuple[str, ...],
                 precision: str, tolerance: float, flops: float,
                 bytes_moved: float) -> None:  # fmt: skip
        self.name, self.params, self.kernels, self.tags = name, params, kernels, ("all",)
        self.id = f"{name}[" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + "]"
        self.precision, self.tolerance = precision, tolerance
        self.flops, self.bytes = flops, bytes_moved

    def prepare(self, seed: int = 0) -> Any:
        return Instance(self, seed)


class Instance:
    def __init__(self, w: Workload, seed: int) -> None:
        import torch

        self.torch, self.kind, p = torch, w.name, w.params
        g = torch.Generator().manual_seed(seed)
        self.out: Any = None
        if self.kind == "tmatmul":
            self.module = importlib.import_module("knobs_kernels.matmul_triton")
            self.a_cpu = torch.randn(p["m"], p["k"], generator=g).half()
            self.b_cpu = torch.randn(p["k"], p["n"], generator=g).half()
            self.a, self.b = self.a_cpu.cuda(), self.b_cpu.cuda()
            self.out = torch.empty(p["m"], p["n"], dtype=torch.float16, device="cuda")
        else:
            self.x_cpu = torch.randn(p["rows"], p["cols"], generator=g)
            self.x = self.x_cpu.cuda()
        if self.kind == "rownorm":
            self.module = importlib.import_module("knobs_kernels.rownorm_triton")
            self.out = torch.empty_like(self.x)
        elif self.kind == "block":
            self.module = importlib.import_module("knobs_kernels.block")
            self.r_cpu = torch.randn(p["rows"], p["cols"], generator=g)
            self.gain_cpu = torch.rand(p["cols"], generator=g) + 0.5
            self.r, self.gain = self.r_cpu.cuda(), self.gain_cpu.cuda()
            self.compiled = torch.compile(self.module.block)
        elif self.kind == "softmax":
            self.module = importlib.import_module("knobs_kernels.softmax")
        self.launch()  # Triton and Inductor compile here, in prepare: never while timed
        torch.cuda.synchronize()

    def launch(self) -> None:
        if self.kind == "tmatmul":
            self.module.matmul(self.a, self.b, self.out)
        elif self.kind == "rownorm":
            self.module.rownorm(self.x, self.out)
        elif self.kind == "block":
            self.out = self.compiled(self.x, self.r, self.gain)
        else:
            self.out = self.module.softmax(self.x)

    def poison(self) -> None:
        self.out = self.torch.full_like(self.out, float("nan"))

    def fetch(self) -> dict[str, Any]:
        return {"out": self.out}

    def reference(self) -> dict[str, Any]:
        torch = self.torch
        if self.kind == "tmatmul":
            return {"out": self.a_cpu.double() @ self.b_cpu.double()}
        x = self.x_cpu.double()
        if self.kind == "rownorm":
            mean = x.mean(dim=-1, keepdim=True)
            return {"out": (x - mean) * torch.rsqrt(x.var(dim=-1, unbiased=False, keepdim=True)
                                                     + 1e-5)}  # fmt: skip
        if self.kind == "block":
            h = (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(x.var(dim=-1, keepdim=True) + 1e-5)
            h = torch.nn.functional.gelu(h * self.gain_cpu.double())
            return {"out": h * 0.5 + self.r_cpu.double()}
        return {"out": torch.softmax(x, dim=-1)}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.out = None


def all_workloads() -> list[Workload]:
    m = n = k = 4096
    rows, cols = 16384, 4096
    big, wide = 8192, 8192
    return [
        Workload("tmatmul", {"m": m, "n": n, "k": k}, ("matmul_kernel",), "fp16", 1e-2,
                 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)),
        Workload("rownorm", {"rows": rows, "cols": cols}, ("rownorm_kernel",), "fp32", 1e-4,
                 0.0, 8.0 * rows * cols),
        # Fused: read x and the residual, write out; a graph break adds a write and a read.
        Workload("block", {"rows": big, "cols": wide}, ("triton_*",), "fp32", 1e-4,
                 0.0, 12.0 * big * wide),
        Workload("softmax", {"rows": 8192, "cols": 4096}, ("*SoftMaxForward*",), "fp32", 1e-5,
                 0.0, 8.0 * 8192 * 4096),
    ]  # fmt: skip

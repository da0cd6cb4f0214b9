"""Workloads of benchmarks/doubt_gpu.py's suite. torch is imported only when a workload is
prepared, so that `kernelwatch-runner list` works without it.

`block` is short (~1 ms): sampled on placements in every process and timed in extra processes.
The others are long launches (each a loop of copies, > 2 ms on the host): one placement a
process, timed again where their processes sit apart (runner.run.wandering). `bimodal` is such
a launch whose every process lands on one of two levels 3% apart (as an autotuner's pick between
two near-equal configurations can): 32 copies in a process of even pid, 33 in an odd one.
"""

from __future__ import annotations

import os
from typing import Any

from doubt_kernels import block as block_module

ROWS, COLS = 8192, 8192  # 256 MiB of fp32 a tensor
COPIES = 32


class Workload:
    precision = "fp32"
    tolerance = 1e-4
    timing_method = "cuda_events"

    def __init__(self, name: str, kernels: tuple[str, ...], bytes_moved: float) -> None:
        self.name, self.params, self.kernels, self.tags = name, {"rows": ROWS, "cols": COLS}, \
            kernels, ("all",)  # fmt: skip
        self.id = f"{name}[cols={COLS},rows={ROWS}]"
        self.flops, self.bytes = 0.0, bytes_moved

    def prepare(self, seed: int = 0) -> Any:
        return Instance(self, seed)


class Instance:
    def __init__(self, w: Workload, seed: int) -> None:
        import torch

        self.torch, self.kind = torch, w.name
        g = torch.Generator().manual_seed(seed)
        self.x_cpu = torch.randn(ROWS, COLS, generator=g)
        self.x = self.x_cpu.cuda()
        self.out = torch.empty_like(self.x)
        self.copies = COPIES + (1 if self.kind == "bimodal" and os.getpid() % 2 else 0)
        if self.kind == "block":
            self.r_cpu = torch.randn(ROWS, COLS, generator=g)
            self.gain_cpu = torch.rand(COLS, generator=g) + 0.5
            self.r, self.gain = self.r_cpu.cuda(), self.gain_cpu.cuda()
            self.compiled = torch.compile(block_module.block)
        self.launch()  # Inductor compiles here, in prepare: never while timed
        torch.cuda.synchronize()

    def launch(self) -> None:
        if self.kind == "block":
            self.out = self.compiled(self.x, self.r, self.gain)
        elif self.kind == "scale":
            for _ in range(COPIES):
                self.torch.mul(self.x, 0.5, out=self.out)
        else:  # copy, bimodal
            for _ in range(self.copies):
                self.out.copy_(self.x)

    def poison(self) -> None:
        self.out = self.torch.full_like(self.x, float("nan"))

    def fetch(self) -> dict[str, Any]:
        return {"out": self.out}

    def reference(self) -> dict[str, Any]:
        torch = self.torch
        x = self.x_cpu.double()
        if self.kind == "block":
            h = (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(x.var(dim=-1, keepdim=True) + 1e-5)
            h = torch.nn.functional.gelu(h * self.gain_cpu.double())
            return {"out": h * 0.5 + self.r_cpu.double()}
        return {"out": x * 0.5 if self.kind == "scale" else x}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.x = self.out = None


def all_workloads() -> list[Workload]:
    tensor = 4.0 * ROWS * COLS
    return [
        # Fused: read x and the residual, write out; a graph break adds a write and a read.
        Workload("block", ("triton_*",), 3 * tensor),
        Workload("bimodal", ("copy",), 2 * tensor * COPIES),
        Workload("copy", ("copy",), 2 * tensor * COPIES),
        Workload("scale", ("mul",), 2 * tensor * COPIES),
    ]

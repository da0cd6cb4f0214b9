"""Workloads whose runs wander while the samples of each run sit tight: kernels unlike the
streaming ones, for the verdicts and work notices to be tried on (histsuite/cuda/wander.cu).

- `tiled`: a tiled SGEMM (128 x 128 tiles in shared memory, 8 x 8 outputs a thread) of 2048^3;
  a commit of the history makes it spill its registers (TILED_SPILL: 32 registers a thread
  instead of 128), the step that left a real series noisy after it.
- `spill`: the same SGEMM held to 64 registers a thread from the start, so it always spills;
  SPILL_EXTRA_K more steps of its inner dimension read zeros (more work, the same product).
- `l2`: a kernel reading 16 MB eight times (L2-resident after the first pass), launched right
  behind a neighbour that writes 128 MB, so that it shares the L2 with the neighbour's dirty
  lines; L2_EXTRA_PASSES more passes read the same data again (its output is their mean).

What the commits change is in histsuite/cuda/wander.h; the parameters never change.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

WANDER_CUBIN = "wander.cubin"
N = 2048
K_PAD = 256  # zero columns of A (rows of B) past N: what SPILL_EXTRA_K reads
GEMM_TILE, GEMM_THREADS = 128, 256
L2_FLOATS = (16 << 20) // 4
NEIGHBOUR_FLOATS = (128 << 20) // 4
L2_BLOCKS, L2_THREADS = 132 * 4, 256

_modules: dict[str, Any] = {}


def module(build: str | None = None) -> Any:
    """The build's wander.cubin (the runner's build folder unless another build is named)."""
    import cupy

    folder = build or os.environ.get("KERNELWATCH_BUILD_DIR", "build")
    if folder not in _modules:
        _modules[folder] = cupy.RawModule(path=str(Path(folder) / WANDER_CUBIN))
    return _modules[folder]


class _Instance:
    """What the instances share: one output (the attribute `output` names), launched from the
    runner's build, loaded at the first launch (`launcher` launches another build's)."""

    output = ""

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        self.run: Callable[[], None] | None = None

    def launcher(self, mod: Any) -> Callable[[], None]:
        raise NotImplementedError

    def launch(self) -> None:
        if self.run is None:
            self.run = self.launcher(module())
        self.run()

    def poison(self) -> None:
        getattr(self, self.output).fill(float("nan"))

    def reset(self) -> None:
        pass

    def fetch(self) -> dict[str, np.ndarray]:
        return {self.output: self.cp.asnumpy(getattr(self, self.output))}


class GemmInstance(_Instance):
    output = "c"

    def __init__(self, workload: Gemm, seed: int) -> None:
        super().__init__()
        cupy, self.w = self.cp, workload
        rs = cupy.random.RandomState(seed)
        self.a = cupy.zeros((N, N + K_PAD), dtype=cupy.float32)
        self.a[:, :N] = rs.standard_normal((N, N), dtype=cupy.float32)
        self.b = cupy.zeros((N + K_PAD, N), dtype=cupy.float32)
        self.b[:N] = rs.standard_normal((N, N), dtype=cupy.float32)
        self.c = cupy.empty((N, N), dtype=cupy.float32)

    def launcher(self, mod: Any) -> Callable[[], None]:
        """This instance's launch of the kernel as `mod` (a build's wander.cubin) has it."""
        kernel = mod.get_function(self.w.kernels[0])
        args = (self.a, self.b, self.c, np.int32(N), np.int32(N + K_PAD))
        grid = (N // GEMM_TILE, N // GEMM_TILE)
        return functools.partial(kernel, grid, (GEMM_THREADS,), args)

    def reference(self) -> dict[str, np.ndarray]:
        a = self.cp.asnumpy(self.a[:, :N]).astype(np.float64)
        b = self.cp.asnumpy(self.b[:N]).astype(np.float64)
        return {"c": a @ b}

    def close(self) -> None:
        self.a = self.b = self.c = None


class L2Instance(_Instance):
    output = "y"

    def __init__(self, workload: L2Neighbour, seed: int) -> None:
        super().__init__()
        cupy = self.cp
        self.x = cupy.random.RandomState(seed).standard_normal(L2_FLOATS, dtype=cupy.float32)
        self.scratch = cupy.empty(NEIGHBOUR_FLOATS, dtype=cupy.float32)
        self.y = cupy.empty(L2_BLOCKS * L2_THREADS, dtype=cupy.float32)

    def launcher(self, mod: Any) -> Callable[[], None]:
        fill, read = mod.get_function("hist_fill"), mod.get_function("hist_l2")
        n4, m4 = np.int64(L2_FLOATS // 4), np.int64(NEIGHBOUR_FLOATS // 4)

        def launch() -> None:
            fill((132 * 8,), (256,), (self.scratch, m4))
            read((L2_BLOCKS,), (L2_THREADS,), (self.x, self.y, n4))

        return launch

    def reference(self) -> dict[str, np.ndarray]:
        """Thread t sums the float4s t, t + T, t + 2T, ... (T threads), each pass alike."""
        threads = L2_BLOCKS * L2_THREADS
        sums = self.cp.asnumpy(self.x).astype(np.float64).reshape(-1, 4).sum(axis=1)
        padded = np.zeros(-(-sums.size // threads) * threads)
        padded[: sums.size] = sums
        return {"y": padded.reshape(-1, threads).sum(axis=0)}

    def close(self) -> None:
        self.x = self.scratch = self.y = None


class Gemm:
    cubin = WANDER_CUBIN
    precision = "fp32"
    tolerance = 1e-4
    timing_method = "cuda_events"

    def __init__(self, variant: str) -> None:
        self.name = variant
        self.params = {"n": N}
        self.id = f"{variant}[n={N}]"
        self.kernels = (f"hist_{variant}",)
        self.tags = ("wander",)
        self.flops = 2 * N**3
        self.bytes = 3 * N * N * 4

    def prepare(self, seed: int = 0, inputs: str = "device") -> GemmInstance:
        return GemmInstance(self, seed)


class L2Neighbour:
    cubin = WANDER_CUBIN
    precision = "fp32"
    tolerance = 1e-5
    timing_method = "cuda_events"

    def __init__(self) -> None:
        self.name = "l2"
        self.params = {"mb": L2_FLOATS * 4 >> 20}
        self.id = f"l2[mb={self.params['mb']}]"
        self.kernels = ("hist_fill", "hist_l2")
        self.tags = ("wander",)
        self.flops = 8 * L2_FLOATS
        self.bytes = 4 * (8 * L2_FLOATS + NEIGHBOUR_FLOATS)

    def prepare(self, seed: int = 0, inputs: str = "device") -> L2Instance:
        return L2Instance(self, seed)


def wander_workloads() -> list[Any]:
    return [Gemm("tiled"), Gemm("spill"), L2Neighbour()]

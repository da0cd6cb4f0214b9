"""SAXPY, out = a*x + y, as a kernelwatch suite: the workloads, their inputs, launch and reference.

CuPy is imported only when a workload is prepared, so that `kernelwatch-runner list` works on a
machine without a GPU. The kernel is compiled by NVRTC the first time it is launched in a process
(a suite with .cu files would build them instead: `build = [...]` in kernelwatch.toml).
"""

from __future__ import annotations

from typing import Any

import numpy as np

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* __restrict__ x,
                                 const float* __restrict__ y, float* __restrict__ out,
                                 long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = a * x[i] + y[i];
}
"""
THREADS = 256
_kernel: Any = None


def kernel() -> Any:
    """The compiled kernel, once per process."""
    global _kernel
    if _kernel is None:
        import cupy

        _kernel = cupy.RawKernel(SOURCE, "saxpy")
    return _kernel


class Saxpy:
    """One workload: SAXPY over n floats."""

    name = "saxpy"
    kernels = ("saxpy",)  # the CUDA kernels its launch runs (ncu and the timeline name them)
    precision = "fp32"
    tolerance = 1e-6  # relative L2 error against the float64 reference that still passes

    def __init__(self, n: int, tags: tuple[str, ...]) -> None:
        self.n, self.tags = n, tags
        self.params = {"n": n}
        self.id = f"saxpy[n={n}]"  # unique in the suite, stable across commits
        self.flops = 2 * n  # one multiply and one add per element
        self.bytes = 3 * 4 * n  # read x and y, write out
        # Launches of a few microseconds are timed with CUPTI's kernel records, longer ones
        # with CUDA events; fixed here, never chosen from a measurement.
        self.timing_method = "cupti" if n < 1 << 20 else "cuda_events"

    def prepare(self, seed: int = 0) -> Instance:
        return Instance(self, seed)


class Instance:
    """A workload's inputs on the GPU, ready to launch."""

    def __init__(self, workload: Saxpy, seed: int) -> None:
        import cupy

        rng = np.random.default_rng(seed)
        self.n, self.a = workload.n, np.float32(rng.uniform(0.5, 2.0))
        self.x_host = rng.standard_normal(self.n, dtype=np.float32)
        self.y_host = rng.standard_normal(self.n, dtype=np.float32)
        self.x, self.y = cupy.asarray(self.x_host), cupy.asarray(self.y_host)
        self.out = cupy.empty(self.n, dtype=cupy.float32)
        self.blocks = min((self.n + THREADS - 1) // THREADS, 132 * 8)

    def launch(self) -> None:
        """Enqueue the work; never synchronize: this is what is timed."""
        args = (self.a, self.x, self.y, self.out, np.int64(self.n))
        kernel()((self.blocks,), (THREADS,), args)

    def poison(self) -> None:
        """Fill the outputs with NaN, so that an element the kernel never writes shows."""
        self.out.fill(np.nan)

    def fetch(self) -> dict[str, np.ndarray]:
        """The outputs as NumPy arrays."""
        import cupy

        return {"out": cupy.asnumpy(self.out)}

    def reference(self) -> dict[str, np.ndarray]:
        """What the outputs should be, in float64, from the inputs."""
        x, y = self.x_host.astype(np.float64), self.y_host.astype(np.float64)
        return {"out": float(self.a) * x + y}

    def reset(self) -> None:
        """Restore what a launch updates in place between timed launches: nothing here."""

    def close(self) -> None:
        self.x = self.y = self.out = None


def all_workloads() -> list[Saxpy]:
    return [Saxpy(1 << 12, ("smoke",)), Saxpy(1 << 24, ("bandwidth",))]

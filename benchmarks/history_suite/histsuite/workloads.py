"""The suite's workloads: per duration class, streaming kernels of one size each, and three
kernels whose runs wander (histsuite/wander.py).

Workload i launches kernel `hist_w{i}` on `n` floats; what its commits change is how many more
bytes the kernel reads (histsuite/cuda/extra.h). The parameters never change, so each workload
is one series along the history. Launches of >= 50 us and 10-50 us are timed with CUDA events,
those of a few microseconds with CUPTI's kernel records: declared here, never measured.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from histsuite.build import CUBIN

# (class, elements, timing method) per workload: 4 of each class.
CLASSES = {
    "long": (32 << 20, "cuda_events"),  # ~90 us on an H100
    "mid": (8 << 20, "cuda_events"),  # ~25 us
    "short": (1 << 20, "cupti"),  # ~5 us
}
LAYOUT = [cls for cls in ("long", "mid", "short") for _ in range(4)]
THREADS = 256
MAX_BLOCKS = 132 * 8

_module: Any = None


def _kernel(name: str) -> Any:
    global _module
    import cupy

    if _module is None:
        build = Path(os.environ.get("KERNELWATCH_BUILD_DIR", "build"))
        _module = cupy.RawModule(path=str(build / CUBIN))
    return _module.get_function(name)


class Instance:
    def __init__(self, workload: Stream, seed: int) -> None:
        import cupy

        self.cp, self.w = cupy, workload
        n = workload.n
        self.x = cupy.random.RandomState(seed).standard_normal(n, dtype=cupy.float32)
        self.pad = cupy.zeros(n, dtype=cupy.float32)  # zeros: more bytes, the same result
        self.y = cupy.empty(n, dtype=cupy.float32)
        self.kernel: Any = None  # the runner's build, loaded at the first launch
        self.blocks = min(MAX_BLOCKS, (n // 4 + THREADS - 1) // THREADS)

    def launch(self) -> None:
        if self.kernel is None:
            self.kernel = _kernel(self.w.kernels[0])
        args = (self.x, self.pad, self.y, np.int64(self.w.n // 4))
        self.kernel((self.blocks,), (THREADS,), args)

    def launcher(self, module: Any) -> Callable[[], None]:
        """This instance's launch of the kernel as `module` (another build's cubin) has it."""
        kernel = module.get_function(self.w.kernels[0])
        args = (self.x, self.pad, self.y, np.int64(self.w.n // 4))
        return functools.partial(kernel, (self.blocks,), (THREADS,), args)

    def poison(self) -> None:
        self.y.fill(float("nan"))

    def reset(self) -> None:
        pass

    def fetch(self) -> dict[str, np.ndarray]:
        return {"y": self.cp.asnumpy(self.y)}

    def reference(self) -> dict[str, np.ndarray]:
        return {"y": 2.0 * self.cp.asnumpy(self.x).astype(np.float64) + 1.0}

    def close(self) -> None:
        self.x = self.pad = self.y = None


class Stream:
    cubin = CUBIN
    precision = "fp32"
    tolerance = 1e-6

    def __init__(self, index: int, cls: str) -> None:
        self.n, self.timing_method = CLASSES[cls]
        self.name = "stream"
        self.params = {"cls": cls, "w": index}
        self.id = f"stream[cls={cls},w={index}]"
        self.kernels = (f"hist_w{index}",)
        self.tags = (cls,)
        self.flops = 2 * self.n
        self.bytes = 8 * self.n

    def prepare(self, seed: int = 0, inputs: str = "device") -> Instance:
        return Instance(self, seed)


def stream_workloads() -> list[Stream]:
    """The streaming kernels alone (the benchmarks of short launches time these)."""
    return [Stream(i, cls) for i, cls in enumerate(LAYOUT)]


def all_workloads() -> list[Any]:
    from histsuite.wander import wander_workloads

    return [*stream_workloads(), *wander_workloads()]

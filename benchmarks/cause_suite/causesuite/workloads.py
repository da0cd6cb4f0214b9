"""The suite's workloads: one per known cause, each launching the kernel(s) of causes.cu.

Each case sizes its launch for an H100 (132 SMs) so that its base takes 50-150 us, and the head
commit (variant.h) changes only the kernel's code (or a constant the workload reads from the
cubin: the grid of `waves`). Every case is timed with CUDA events. `prepare(seed, module=...)`
lets benchmarks/cause_gpu.py's truth instrument launch a base and a head build side by side.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from causesuite.build import CUBIN

SMS = 132
THREADS = 256
WAVES_THREADS = 1024
SPILL_ROUNDS = 512
CHASE_TABLE = 1 << 20  # 4 MB of int32: stays in the 50 MB L2
CHASE_HOPS = 96
WAVES_ITERS = 4096
INSTRUCTION_ROUNDS = 1024
# (case, kernels, true cause) in the order of the list.
CASES = (
    ("dram", ("cause_dram",), "more DRAM traffic"),
    ("coalescing", ("cause_coalescing",), "uncoalesced access"),
    ("spills", ("cause_spills",), "register spills"),
    ("occ_regs", ("cause_occ_regs",), "occupancy lost to registers"),
    ("occ_smem", ("cause_occ_smem",), "occupancy lost to shared memory"),
    ("waves", ("cause_waves",), "fewer waves (smaller grid)"),
    ("instructions", ("cause_instructions",), "extra instructions"),
    ("bank_conflicts", ("cause_bank_conflicts",), "shared-memory bank conflicts"),
    ("second_kernel", ("cause_multi_first", "cause_multi_second"), "second kernel slowed"),
    ("atomic", ("cause_atomic",), "serialising atomic"),
)


def load_module(build: str | Path | None = None) -> Any:
    import cupy

    folder = Path(build or os.environ.get("KERNELWATCH_BUILD_DIR", "build"))
    return cupy.RawModule(path=str(folder / CUBIN))


class Instance:
    """One case's buffers on the GPU and its launch."""

    def __init__(self, workload: Cause, seed: int, module: Any) -> None:
        import cupy as cp

        self.cp, self.w, self.case = cp, workload, workload.case
        self.functions = [module.get_function(k) for k in workload.kernels]
        rng = np.random.default_rng(seed)
        self.host: dict[str, np.ndarray] = {}
        self.dev: dict[str, Any] = {}
        getattr(self, f"_setup_{self.case}")(rng, module)

    # -- set-up: host inputs, device buffers, the launch's arguments --------------------------

    def _put(self, **arrays: np.ndarray) -> None:
        for name, array in arrays.items():
            self.host[name] = array
            self.dev[name] = self.cp.asarray(array)

    def _out(self, name: str, shape: int, dtype: Any = np.float32) -> None:
        self.dev[name] = self.cp.empty(shape, dtype=dtype)

    def _setup_dram(self, rng: np.random.Generator, module: Any) -> None:
        n = 32 << 20
        self._put(x=rng.standard_normal(n, dtype=np.float32), pad=np.zeros(n, np.float32))
        self._out("y", n)
        grid = min(SMS * 8, n // 4 // THREADS)
        self.calls = [(0, grid, THREADS, ("x", "pad", "y", np.int64(n // 4)))]

    def _setup_coalescing(self, rng: np.random.Generator, module: Any) -> None:
        n = 16 << 20
        self._put(x=rng.standard_normal(n, dtype=np.float32))
        self._out("y", n)
        self.calls = [(0, SMS * 8, THREADS, ("x", "y", np.int64(n)))]

    def _setup_spills(self, rng: np.random.Generator, module: Any) -> None:
        n = SMS * 2 * THREADS  # two blocks an SM: the same occupancy whatever the registers
        self._put(x=rng.standard_normal(n, dtype=np.float32))
        self._out("y", n)
        self.calls = [(0, SMS * 2, THREADS, ("x", "y", np.int64(n), np.int32(SPILL_ROUNDS)))]

    def _setup_chase(self, rng: np.random.Generator) -> None:
        self._put(next=rng.permutation(CHASE_TABLE).astype(np.int32))
        threads = SMS * 2048 * 4  # four full waves at the base's occupancy
        self._out("out", threads, np.int32)
        args = ("next", "out", np.int32(CHASE_TABLE), np.int32(CHASE_HOPS), np.int32(0))
        self.calls = [(0, threads // THREADS, THREADS, args)]

    def _setup_occ_regs(self, rng: np.random.Generator, module: Any) -> None:
        self._setup_chase(rng)

    def _setup_occ_smem(self, rng: np.random.Generator, module: Any) -> None:
        self._setup_chase(rng)

    def _setup_waves(self, rng: np.random.Generator, module: Any) -> None:
        n = SMS * WAVES_THREADS * 4
        self._put(x=rng.uniform(-0.9, 0.9, n).astype(np.float32))
        self._out("y", n)
        where = module.get_global("waves_blocks")  # the head's grid is in its cubin
        blocks = int(self.cp.ndarray((1,), self.cp.int32, where).get()[0])
        self.calls = [(0, blocks, WAVES_THREADS, ("x", "y", np.int64(n), np.int32(WAVES_ITERS)))]

    def _setup_instructions(self, rng: np.random.Generator, module: Any) -> None:
        n = SMS * 2048 * 2
        self._put(x=rng.standard_normal(n, dtype=np.float32))
        self._out("y", n)
        args = ("x", "y", np.int64(n), np.int32(INSTRUCTION_ROUNDS), np.float32(1), np.float32(0))
        self.calls = [(0, SMS * 8, THREADS, args)]

    def _setup_bank_conflicts(self, rng: np.random.Generator, module: Any) -> None:
        tiles = 16 << 10
        self._put(x=rng.standard_normal(tiles * 1024, dtype=np.float32))
        self._out("y", tiles * THREADS)
        self.calls = [(0, SMS * 8, THREADS, ("x", "y", np.int64(tiles)))]

    def _setup_second_kernel(self, rng: np.random.Generator, module: Any) -> None:
        n = 32 << 20
        self._put(x=rng.standard_normal(n, dtype=np.float32), pad=np.zeros(n, np.float32))
        self._out("y", n)
        self._out("z", n)
        grid = SMS * 8
        self.calls = [
            (0, grid, THREADS, ("x", "y", np.int64(n // 4))),
            (1, grid, THREADS, ("y", "pad", "z", np.int64(n // 4))),
        ]

    def _setup_atomic(self, rng: np.random.Generator, module: Any) -> None:
        n = 16 << 20
        self._put(x=rng.uniform(0, 1, n).astype(np.float32))
        self._out("total", 1)
        self.calls = [(0, SMS * 8, THREADS, ("x", "total", np.int64(n)))]

    # -- the instance protocol ----------------------------------------------------------------

    def launch(self) -> None:
        for index, grid, block, args in self.calls:
            real = tuple(self.dev[a] if isinstance(a, str) else a for a in args)
            self.functions[index]((grid,), (block,), real)

    def outputs(self) -> list[str]:
        return {"occ_regs": ["out"], "occ_smem": ["out"], "second_kernel": ["z"],
                "atomic": ["total"]}.get(self.case, ["y"])  # fmt: skip

    def poison(self) -> None:
        if self.case == "atomic":  # an accumulated output: NaN would stay NaN, start at zero
            self.reset()
            return
        for name in self.outputs():
            self.dev[name].fill(-1 if self.dev[name].dtype == np.int32 else np.nan)

    def reset(self) -> None:
        if self.case == "atomic":  # a memset, no kernel: the sum starts from zero each launch
            total = self.dev["total"]
            self.cp.cuda.runtime.memsetAsync(total.data.ptr, 0, total.nbytes,
                                             self.cp.cuda.get_current_stream().ptr)  # fmt: skip

    def fetch(self) -> dict[str, np.ndarray]:
        return {name: self.cp.asnumpy(self.dev[name]) for name in self.outputs()}

    def reference(self) -> dict[str, np.ndarray]:
        return reference(self.case, self.host)

    def close(self) -> None:
        self.dev.clear()


def reference(case: str, host: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What every build of the case computes, in float64 on the host."""
    if case in ("occ_regs", "occ_smem"):
        warps = SMS * 2048 * 4 // 32
        p = np.arange(warps) % CHASE_TABLE
        for _ in range(CHASE_HOPS):
            p = host["next"][p]
        return {"out": np.repeat(p, 32).astype(np.int32)}
    if case == "atomic":
        return {"total": np.array([host["x"].astype(np.float64).sum()])}
    x = host["x"].astype(np.float64)
    if case == "dram":
        return {"y": 2 * x + 1}
    if case == "coalescing":
        return {"y": x + 1}
    if case == "spills":
        return {"y": _spills(x)}
    if case == "waves":
        return {"y": 0.5 * (1 - x**WAVES_ITERS) / (1 - x)}
    if case == "instructions":
        return {"y": x}
    if case == "bank_conflicts":
        tiles = x.reshape(-1, 32, 32)
        counts = np.zeros((8, 32))  # how often thread row r0 reads each column of its row
        for r0 in range(8):
            for rep in range(16):
                for r in range(r0, 32, 8):
                    counts[r0, (r + rep) % 32] += 1
        return {"y": np.einsum("tlc,rc->trl", tiles, counts).reshape(-1)}
    if case == "second_kernel":
        return {"z": 2 * (x + 1)}
    raise ValueError(f"unknown case {case!r}")


def _spills(x: np.ndarray) -> np.ndarray:
    acc = np.stack([np.roll(x, -k) for k in range(40)])  # acc[k] = x[(i + k) % n]
    for _ in range(SPILL_ROUNDS):
        new = acc.copy()
        for k in range(40):  # in order: acc[(k + 7) % 40] may be new already
            new[k] = new[k] * 0.999 + new[(k + 7) % 40] * 0.001
        acc = new
    return acc.sum(axis=0)


class Cause:
    precision = "fp32"
    timing_method = "cuda_events"

    def __init__(self, case: str, kernels: tuple[str, ...], cause: str) -> None:
        self.case, self.kernels, self.cause = case, kernels, cause
        self.name = "cause"
        self.params = {"case": case}
        self.id = f"cause[case={case}]"
        self.tags = ("cause",)
        self.tolerance = 1e-3 if case in ("spills", "atomic", "waves") else 1e-5
        self.flops = 0
        self.bytes = 0

    def prepare(self, seed: int = 0, inputs: str = "host", module: Any = None) -> Instance:
        return Instance(self, seed, module if module is not None else load_module())


def all_workloads() -> list[Cause]:
    return [Cause(*case) for case in CASES]

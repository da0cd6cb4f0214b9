"""Workloads of the CPU fixture suite. REPEAT is what a "slower commit" changes."""

from __future__ import annotations

import os
import time

import numpy as np

REPEAT = 1
MISBEHAVE = os.environ.get("KW_FIXTURE_MISBEHAVE", "")
# 5% by default; a test that tells levels apart across processes widens it, since a 2 ms sleep
# overshot by up to ~0.13 ms more in one process than in another on a loaded 2-core host
WANDER_STEP = float(os.environ.get("KW_FIXTURE_WANDER_STEP", "0.05"))


class Instance:
    def __init__(self, workload: Workload, seed: int) -> None:
        rng = np.random.default_rng(seed)
        n = workload.params["n"]
        self.kind = workload.name
        self.seed = seed
        if self.kind == "compiles":  # as a workload whose prepare compiles and autotunes
            time.sleep(0.3)
            # and keeps what it compiled in Triton's cache, as Triton does, a version per seed:
            # the check's (seed 0) is found by the first timing process, the others miss
            cache = os.environ.get("TRITON_CACHE_DIR")
            entry = os.path.join(cache or "", f"fma_cpu_{seed}", "fma_cpu.cubin")
            if cache and not os.path.exists(entry):
                os.makedirs(os.path.dirname(entry), exist_ok=True)
                with open(entry, "wb") as out:
                    out.write(b"compiled")
            self.choices = {"fma_cpu": f"block={64 << (seed % 2)}"}
        self.a = rng.standard_normal((n, n)).astype(np.float32)
        self.b = rng.standard_normal((n, n)).astype(np.float32)
        self.out = np.empty((n, n), dtype=np.float32)

    def launch(self) -> None:
        if self.kind == "hang":
            time.sleep(3600)
        if self.kind == "crash":
            os._exit(3)
        # Element-wise work: single-threaded and steady, unlike a BLAS call on a busy host.
        for _ in range(REPEAT):
            np.multiply(self.a, self.b, out=self.out)
            np.add(self.out, self.a, out=self.out)
        if self.kind == "wander":  # each timing process (its seed) sits a step from the last
            time.sleep(0.002 * (1 + WANDER_STEP * (self.seed % 3)))
        if self.kind == "nan":
            self.out[0, 0] = np.nan

    def poison(self) -> None:
        self.out.fill(np.nan)

    def fetch(self) -> dict[str, np.ndarray]:
        return {"out": self.out}

    def reference(self) -> dict[str, np.ndarray]:
        a, b = self.a.astype(np.float64), self.b.astype(np.float64)
        return {"out": a * b + a}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


class Workload:
    precision = "fp32"
    tolerance = 1e-5

    def __init__(self, name: str, n: int, tags: tuple[str, ...]) -> None:
        self.name, self.params, self.tags = name, {"n": n}, tags
        self.id = f"{name}[n={n}]"
        self.kernels = ("fma_cpu",)
        self.flops = 2 * n * n
        self.bytes = 3 * 4 * n * n

    def prepare(self, seed: int = 0) -> Instance:
        return Instance(self, seed)


def all_workloads() -> list[Workload]:
    workloads = [Workload("fma", 256, ("fast",)), Workload("fma", 512, ("fast",))]
    if MISBEHAVE:
        workloads += [Workload(kind, 8, ("bad",)) for kind in MISBEHAVE.split(",")]
    return workloads

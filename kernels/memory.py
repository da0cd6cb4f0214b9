"""Memory-bound workloads of the suite's other kernels: AdamW, dropout, transpose."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kernels import counts, ops, reference
from kernels.workload import Instance, Workload, draws


class AdamW(Workload):
    """One multi-tensor AdamW launch over tensors of the given sizes."""

    name = "adamw"
    kernels = ("adamw_multi",)
    OPT: ClassVar[dict] = reference.ADAMW

    def __init__(self, sizes: tuple[int, ...], *, tags: tuple[str, ...] = ()):
        super().__init__(tags=tags, sizes=list(sizes))
        self.sizes = tuple(sizes)

    @property
    def outputs(self) -> tuple[str, ...]:  # type: ignore[override]
        n = range(len(self.sizes))
        return (*(f"delta{i}" for i in n), *(f"m{i}" for i in n), *(f"v{i}" for i in n))

    @property
    def flops(self) -> int:
        return counts.adamw_flops(sum(self.sizes))

    @property
    def bytes(self) -> int:
        return counts.adamw_bytes(sum(self.sizes))

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        d = draws(seed, xp)
        x = {}
        for i, n in enumerate(self.sizes):
            # scales such that the step (~3e-3) is large next to the rounding of p (~0.05)
            x[f"p{i}"] = d.normal(n, 0.05)
            x[f"g{i}"] = d.normal(n, 0.01)
            x[f"m{i}"] = d.normal(n, 0.001)
            x[f"v{i}"] = d.uniform(n, 0.5e-6, 1.5e-6)
        return x

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        out = {}
        for i in range(len(self.sizes)):
            p = inputs[f"p{i}"]
            new_p, m, v = reference.adamw(
                p, inputs[f"g{i}"], inputs[f"m{i}"], inputs[f"v{i}"], **self.OPT
            )
            out[f"delta{i}"], out[f"m{i}"], out[f"v{i}"] = new_p - p, m, v
        return out

    def instance(self, inputs, library) -> Instance:
        return _AdamWInstance(self, inputs, library)


class _AdamWInstance(Instance):
    @property
    def inplace(self) -> tuple[str, ...]:  # type: ignore[override]
        n = range(len(self.workload.sizes))
        return tuple(f"{k}{i}" for k in "pmv" for i in n)

    def setup(self) -> None:
        n = range(len(self.workload.sizes))
        d = self.dev
        self.group = ops.AdamWGroup(
            [d[f"p{i}"] for i in n],
            [d[f"g{i}"] for i in n],
            [d[f"m{i}"] for i in n],
            [d[f"v{i}"] for i in n],
        )

    def launch(self) -> None:
        self.group.step(self.lib, **self.workload.OPT)

    def fetch(self, xp: Any = np) -> dict[str, Any]:
        conv = (lambda a: a) if xp is self.cp else self.cp.asnumpy
        out = {}
        for i in range(len(self.workload.sizes)):
            new = conv(self.dev[f"p{i}"]).astype(xp.float64)
            out[f"delta{i}"] = new - self.as_xp(self.inputs[f"p{i}"], xp).astype(xp.float64)
            out[f"m{i}"] = conv(self.dev[f"m{i}"])
            out[f"v{i}"] = conv(self.dev[f"v{i}"])
        return out


class Dropout(Workload):
    """y = dropout(x) with the in-kernel Philox mask."""

    name = "dropout"
    kernels = ("dropout_fwd",)
    outputs = ("y",)

    def __init__(self, n: int, p: float, *, tags: tuple[str, ...] = ()):
        super().__init__(tags=tags, n=n, p=p)
        self.n, self.p = n, p

    @property
    def flops(self) -> int:
        return self.n

    @property
    def bytes(self) -> int:
        return counts.elementwise_bytes(self.n, reads=1, writes=1)

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        d = draws(seed, xp)
        return {"x": d.normal(self.n), "seed": d.seed63()}

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        mask = reference.dropout_mask((self.n,), self.p, int(inputs["seed"]), xp)
        return {"y": inputs["x"] * mask}

    def instance(self, inputs, library) -> Instance:
        return _DropoutInstance(self, inputs, library)


class _DropoutInstance(Instance):
    def setup(self) -> None:
        self.out = {"y": self.empty(self.workload.n)}
        self.seed = int(self.inputs["seed"])

    def launch(self) -> None:
        ops.dropout(self.lib, self.dev["x"], self.out["y"], self.workload.p, self.seed)


class Transpose(Workload):
    """out = in^T through the shared-memory tiled kernel (not used by the training step)."""

    name = "transpose"
    kernels = ("transpose_tiled",)
    outputs = ("out",)

    def __init__(self, rows: int, cols: int, *, tags: tuple[str, ...] = ()):
        super().__init__(tags=tags, rows=rows, cols=cols)
        self.rows, self.cols = rows, cols

    @property
    def flops(self) -> int:
        return 0

    @property
    def bytes(self) -> int:
        return counts.elementwise_bytes(self.rows * self.cols, reads=1, writes=1)

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        return {"x": draws(seed, xp).normal((self.rows, self.cols))}

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        return {"out": xp.ascontiguousarray(inputs["x"].T)}

    def instance(self, inputs, library) -> Instance:
        return _TransposeInstance(self, inputs, library)


class _TransposeInstance(Instance):
    def setup(self) -> None:
        self.out = {"out": self.empty(self.workload.cols, self.workload.rows)}

    def launch(self) -> None:
        ops.transpose(self.lib, self.dev["x"], self.out["out"])

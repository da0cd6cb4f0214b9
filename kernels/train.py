"""The training step: 2-layer MLP (Linear + GELU + dropout, Linear), MSE loss, backward, AdamW.

Seven launches, all the suite's kernels, no transpose:

1. ``gemm_bias_act_fwd``   Z1 = X.W1 + b1 (saved), D = dropout(GELU(Z1))
2. ``gemm_bias_act_fwd``   Y = D.W2 + b2
3. ``mse_loss_grad``       loss = mean((Y - T)^2), gY = 2 (Y - T) / n
4. ``gemm_bwd_tn_dweight`` gW2 = D^T.gY, gb2 = column sums of gY
5. ``gemm_bwd_nt_dinput``  gZ1 = (gY.W2^T) * mask / (1 - p) * GELU'(Z1)  (epilogue-fused)
6. ``gemm_bwd_tn_dweight`` gW1 = X^T.gZ1, gb1 = column sums of gZ1
7. ``adamw_multi``         AdamW on W1, b1, W2, b2 in one launch

The optimizer's state starts warm (m = 0, v > 0, step 10) so that the update is a smooth function
of the gradient and can be checked elementwise against the float64 reference.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kernels import counts, ops, reference
from kernels.workload import Instance, Workload, draws

PARAMS = ("w1", "b1", "w2", "b2")


class TrainStep(Workload):
    name = "train_step"
    outputs = (
        "loss", "y", "z1",
        *(f"g{p}" for p in PARAMS),
        *(f"delta_{p}" for p in PARAMS),
        *(f"m_{p}" for p in PARAMS),
        *(f"v_{p}" for p in PARAMS),
    )  # fmt: skip
    OPT: ClassVar[dict] = reference.ADAMW

    def __init__(
        self,
        batch: int,
        d_in: int,
        d_hidden: int,
        d_out: int,
        p_drop: float = 0.1,
        *,
        tags: tuple[str, ...] = (),
    ):
        super().__init__(
            tags=tags, batch=batch, d_in=d_in, d_hidden=d_hidden, d_out=d_out, p_drop=p_drop
        )
        self.dims = (batch, d_in, d_hidden, d_out)
        self.p_drop = p_drop

    @property
    def kernels(self) -> tuple[str, ...]:  # type: ignore[override]
        b, i, h, o = self.dims
        fwd = (*ops.gemm_fwd_kernels(b, h, i), *ops.gemm_fwd_kernels(b, o, h))
        rest = ("gemm_bwd_tn_dweight", "gemm_bwd_nt_dinput", "mse_loss_grad", "adamw_multi")
        return tuple(dict.fromkeys((*fwd, *rest)))

    @property
    def flops(self) -> int:
        return counts.mlp_train_step_flops(*self.dims)

    @property
    def bytes(self) -> int:
        return counts.mlp_train_step_bytes(*self.dims)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        _, i, h, o = self.dims
        return {"w1": (i, h), "b1": (h,), "w2": (h, o), "b2": (o,)}

    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        d = draws(seed, xp)
        b, i, h, o = self.dims
        x = {
            "x": d.normal((b, i)),
            "t": d.normal((b, o)),
            "w1": d.normal((i, h), 1 / np.sqrt(i)),
            "b1": d.normal(h, 0.1),
            "w2": d.normal((h, o), 1 / np.sqrt(h)),
            "b2": d.normal(o, 0.1),
        }
        for p, shape in self.shapes().items():
            x[f"m_{p}"] = d.zeros(shape)
            x[f"v_{p}"] = d.uniform(shape, 0.5e-10, 1.5e-10)
        x["dropout_seed"] = d.seed63()
        return x

    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        i = inputs
        state = {p: (i[f"m_{p}"], i[f"v_{p}"]) for p in PARAMS}
        seed = int(i["dropout_seed"])
        return reference.mlp_train_step(
            i["x"], i["t"], i["w1"], i["b1"], i["w2"], i["b2"], state,
            p_drop=self.p_drop, seed=seed, opt=self.OPT, xp=xp,
        )  # fmt: skip

    def instance(self, inputs, library) -> Instance:
        return _TrainStepInstance(self, inputs, library)


class _TrainStepInstance(Instance):
    inplace = (*PARAMS, *(f"m_{p}" for p in PARAMS), *(f"v_{p}" for p in PARAMS))

    def setup(self) -> None:
        w = self.workload
        b, _, h, o = w.dims
        e = self.empty
        self.out = {"loss": e(1), "y": e(b, o), "z1": e(b, h)}
        for p, shape in w.shapes().items():
            self.out[f"g{p}"] = e(*shape)
        self.scratch = {"d": e(b, h), "gy": e(b, o), "gz1": e(b, h)}
        self.work1 = ops.gemm_fwd_workspace(b, h, w.dims[1])
        self.work2 = ops.gemm_fwd_workspace(b, o, h)
        for name, work in (("work1", self.work1), ("work2", self.work2)):
            if work is not None:
                self.scratch[name] = work
        d = self.dev
        self.adamw = ops.AdamWGroup(
            [d[p] for p in PARAMS],
            [self.out[f"g{p}"] for p in PARAMS],
            [d[f"m_{p}"] for p in PARAMS],
            [d[f"v_{p}"] for p in PARAMS],
        )
        self.mse = ops.MSELoss(b * o)
        self.seed = int(self.inputs["dropout_seed"])

    def launch(self) -> None:
        lib, d, o, s = self.lib, self.dev, self.out, self.scratch
        p, seed = self.workload.p_drop, self.seed
        ops.gemm_fwd(lib, d["x"], d["w1"], d["b1"], s["d"], o["z1"], "gelu", p, seed,
                     workspace=self.work1)  # fmt: skip
        ops.gemm_fwd(lib, s["d"], d["w2"], d["b2"], o["y"], None, "none", workspace=self.work2)
        self.mse(lib, o["y"], d["t"], s["gy"], o["loss"])
        ops.gemm_bwd_weight(lib, s["d"], s["gy"], None, o["gw2"], None, o["gb2"])
        ops.gemm_bwd_input(lib, s["gy"], d["w2"], s["gz1"], o["z1"], "gelu", p, seed)
        ops.gemm_bwd_weight(lib, d["x"], s["gz1"], None, o["gw1"], None, o["gb1"])
        self.adamw.step(lib, **self.workload.OPT)

    def fetch(self, xp: Any = np) -> dict[str, Any]:
        cp = self.cp
        conv = (lambda a: a) if xp is cp else cp.asnumpy
        out = {k: conv(v) for k, v in self.out.items()}
        for p in PARAMS:
            new = conv(self.dev[p]).astype(xp.float64)
            out[f"delta_{p}"] = new - self.as_xp(self.inputs[p], xp).astype(xp.float64)
            out[f"m_{p}"] = conv(self.dev[f"m_{p}"])
            out[f"v_{p}"] = conv(self.dev[f"v_{p}"])
        return out

"""A PyTorch team's kernels as a kernelwatch suite: a CUDA operator built with load_inline, a
Triton kernel, and an MLP training step compiled with torch.compile.

torch and Triton are imported only when a workload is prepared, so that `kernelwatch-runner
list` works on a machine without them. Everything that compiles (the extension's nvcc build,
Triton's JIT and autotuning, Inductor's code generation) happens in `prepare`, never in
`launch`, the thing that is timed; the runner points each compiler's cache at a folder it keeps
between commits, so a commit that does not change a kernel does not compile it again.

Each launch runs on PyTorch's current stream, the CUDA default stream here: the runner's timers
and L2 flush run on it too, so they bracket the work (docs/suites.md says what other streams
need).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# What load_inline binds to Python (its definition is in scale_rows.cu).
DECLARATION = (
    "torch::Tensor scale_rows(torch::Tensor x, torch::Tensor scale, double shift, "
    "torch::Tensor out);"
)


class Workload:
    """What every workload of this suite shares: its identity and its instance."""

    precision = "fp32"
    tolerance = 1e-5

    def __init__(self, name: str, params: dict[str, int], kernels: tuple[str, ...],
                 tags: tuple[str, ...], flops: float, bytes_moved: float,
                 timing_method: str) -> None:  # fmt: skip
        self.name, self.params, self.kernels, self.tags = name, params, kernels, tags
        self.id = f"{name}[{','.join(f'{k}={v}' for k, v in sorted(params.items()))}]"
        self.flops, self.bytes, self.timing_method = flops, bytes_moved, timing_method


class ScaleRows(Workload):
    """out = x * scale[row] + shift, a CUDA kernel of the repository's own, as a torch op."""

    def __init__(self, rows: int, cols: int, tags: tuple[str, ...]) -> None:
        super().__init__("scale_rows", {"rows": rows, "cols": cols}, ("scale_rows_kernel",),
                         tags, 2.0 * rows * cols, 8.0 * rows * cols, "cuda_events")  # fmt: skip

    def prepare(self, seed: int = 0) -> Any:
        return ScaleRowsInstance(self, seed)


class ScaleRowsInstance:
    def __init__(self, w: ScaleRows, seed: int) -> None:
        import torch
        from torch.utils.cpp_extension import load_inline

        # Built into $TORCH_EXTENSIONS_DIR (the runner keeps it between commits) under a name
        # of the source's digest: load_inline keeps one build per name, so under a fixed name a
        # confirmation or a bisection that runs two versions of the source built each one anew
        # in turn (~60 s each on the H200); this way each version is built once.
        source = (HERE / "scale_rows.cu").read_text()
        digest = hashlib.sha256(f"{DECLARATION}\n{source}".encode()).hexdigest()[:16]
        self.ops = load_inline(name=f"kw_example_scale_rows_{digest}", cpp_sources=DECLARATION,
                               cuda_sources=source, functions=["scale_rows"],
                               verbose=False)  # fmt: skip
        g = torch.Generator().manual_seed(seed)
        rows, cols = w.params["rows"], w.params["cols"]
        self.x_cpu = torch.randn(rows, cols, generator=g)
        self.scale_cpu = torch.rand(rows, generator=g) + 0.5
        self.shift = 0.25
        self.x, self.scale = self.x_cpu.cuda(), self.scale_cpu.cuda()
        self.out = torch.empty_like(self.x)

    def launch(self) -> None:
        self.ops.scale_rows(self.x, self.scale, self.shift, self.out)

    def poison(self) -> None:
        self.out.fill_(float("nan"))

    def fetch(self) -> dict[str, Any]:
        return {"out": self.out}  # a tensor: the runner brings it to the host

    def reference(self) -> dict[str, Any]:
        x, scale = self.x_cpu.double(), self.scale_cpu.double()
        return {"out": x * scale[:, None] + self.shift}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.x = self.scale = self.out = None


class Softmax(Workload):
    """A row softmax in Triton (torch_kernels/softmax_triton.py), autotuned."""

    def __init__(self, rows: int, cols: int, tags: tuple[str, ...]) -> None:
        super().__init__("softmax", {"rows": rows, "cols": cols}, ("softmax_kernel",), tags,
                         5.0 * rows * cols, 8.0 * rows * cols, "cupti")  # fmt: skip

    def prepare(self, seed: int = 0) -> Any:
        return SoftmaxInstance(self, seed)


class SoftmaxInstance:
    def __init__(self, w: Softmax, seed: int) -> None:
        import torch

        from torch_kernels.softmax_triton import softmax, softmax_kernel

        g = torch.Generator().manual_seed(seed)
        self.x_cpu = torch.randn(w.params["rows"], w.params["cols"], generator=g) * 4
        self.x = self.x_cpu.cuda()
        self.out = torch.empty_like(self.x)
        self.softmax = softmax
        self.launch()  # Triton compiles and autotunes here, in prepare: never while timed
        torch.cuda.synchronize()
        # What the autotuner chose: recorded per run, named in an alert when it changes.
        self.choices = {"softmax_kernel": str(softmax_kernel.best_config)}

    def launch(self) -> None:
        self.softmax(self.x, self.out)

    def poison(self) -> None:
        self.out.fill_(float("nan"))

    def fetch(self) -> dict[str, Any]:
        return {"out": self.out}

    def reference(self) -> dict[str, Any]:
        return {"out": self.x_cpu.double().softmax(dim=1)}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.x = self.out = None


class TrainStep(Workload):
    """One SGD step of a two-layer MLP (forward, loss, backward, update), the model compiled
    with torch.compile: Inductor's generated Triton kernels (`triton_*`) beside the GEMMs."""

    tolerance = 1e-4

    def __init__(self, batch: int, d_in: int, d_hidden: int, tags: tuple[str, ...]) -> None:
        gemms = 2.0 * batch * d_in * d_hidden * 2  # two layers of the same size
        super().__init__("mlp_step", {"batch": batch, "d_in": d_in, "d_hidden": d_hidden},
                         ("triton_*",), tags, 3 * gemms, 4.0 * 2 * d_in * d_hidden * 3,
                         "cuda_events")  # fmt: skip

    def prepare(self, seed: int = 0) -> Any:
        return TrainStepInstance(self, seed)


class TrainStepInstance:
    LR = 1e-3

    def __init__(self, w: TrainStep, seed: int) -> None:
        import torch

        torch.manual_seed(seed)
        batch, d_in, d_hidden = w.params["batch"], w.params["d_in"], w.params["d_hidden"]
        self.model = torch.nn.Sequential(torch.nn.Linear(d_in, d_hidden), torch.nn.GELU(),
                                         torch.nn.Linear(d_hidden, d_in))  # fmt: skip
        self.initial = {k: v.clone() for k, v in self.model.state_dict().items()}
        self.x_cpu, self.y_cpu = torch.randn(batch, d_in), torch.randn(batch, d_in)
        self.model.cuda()
        self.x, self.y = self.x_cpu.cuda(), self.y_cpu.cuda()
        self.compiled = torch.compile(self.model)
        self.torch = torch
        self.loss = torch.full((), float("nan"), device="cuda")
        self.launch()  # Inductor compiles here, in prepare: never while timed
        torch.cuda.synchronize()
        self.model.load_state_dict(self.initial)

    def launch(self) -> None:
        torch = self.torch
        self.model.zero_grad(set_to_none=False)
        self.loss = torch.nn.functional.mse_loss(self.compiled(self.x), self.y)
        self.loss.backward()
        with torch.no_grad():
            params = [p for p in self.model.parameters()]
            torch._foreach_add_(params, [p.grad for p in params], alpha=-self.LR)

    def poison(self) -> None:
        self.loss = self.torch.full((), float("nan"), device="cuda")
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.fill_(float("nan"))

    def fetch(self) -> dict[str, Any]:
        first = self.model[0]
        return {"loss": self.loss.reshape(1), "w1_grad": first.weight.grad}

    def reference(self) -> dict[str, Any]:
        torch = self.torch
        first, second = self.initial["0.weight"].shape, self.initial["2.weight"].shape
        model = torch.nn.Sequential(torch.nn.Linear(first[1], first[0]), torch.nn.GELU(),
                                    torch.nn.Linear(second[1], second[0]))  # fmt: skip
        model.load_state_dict(self.initial)
        model.double()
        loss = torch.nn.functional.mse_loss(model(self.x_cpu.double()), self.y_cpu.double())
        loss.backward()
        return {"loss": loss.detach().reshape(1), "w1_grad": model[0].weight.grad}

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.model = self.compiled = None


def all_workloads() -> list[Workload]:
    return [
        ScaleRows(1024, 1024, ("smoke",)),
        ScaleRows(8192, 8192, ("bandwidth",)),
        Softmax(4096, 1024, ("smoke",)),
        TrainStep(256, 1024, 4096, ("smoke",)),
    ]

"""The contract between the suite and its users: ``Workload`` (a description, CPU-safe) and
``Instance`` (its GPU state). See the package docstring for the whole interface."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

TOLERANCES = {"fp32": 1e-4, "tf32": 2e-3}  # bound on the relative L2 error, per precision
POISON_BITS = 0x7FD15EA5  # a quiet NaN whose payload no kernel produces: "never written"
REFERENCE_ON_DEVICE_FLOPS = 2e10  # above this the float64 reference runs on the GPU (CuPy)
REFERENCE_ON_DEVICE_BYTES = 2e9


def format_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "x".join(format_value(x) for x in v)
    return str(v)


class Workload(ABC):
    """One timed, checked piece of GPU work at fixed parameters.

    Subclasses set ``name``, ``kernels`` (CUDA kernel names the launch runs, primary first; empty
    for library baselines, whose kernels the library picks), ``outputs`` (what ``fetch`` and
    ``reference`` return) and implement the abstract methods.
    """

    name: ClassVar[str]
    kernels: ClassVar[tuple[str, ...]]
    outputs: ClassVar[tuple[str, ...]]
    precision: ClassVar[str] = "fp32"

    def __init__(self, *, tags: tuple[str, ...] = (), **params: Any):
        self.params = {k: params[k] for k in sorted(params)}
        json.dumps(self.params)  # parameters must be JSON-able
        self.tags = tuple(tags)

    @property
    def id(self) -> str:
        inner = ",".join(f"{k}={format_value(v)}" for k, v in self.params.items())
        return f"{self.name}[{inner}]"

    @property
    def tolerance(self) -> float:
        return TOLERANCES[self.precision]

    @property
    @abstractmethod
    def flops(self) -> int: ...

    @property
    @abstractmethod
    def bytes(self) -> int: ...

    @property
    def reference_on_device(self) -> bool:
        """Whether ``check`` computes the float64 reference with CuPy on the GPU."""
        return self.flops > REFERENCE_ON_DEVICE_FLOPS or self.bytes > REFERENCE_ON_DEVICE_BYTES

    @abstractmethod
    def make_inputs(self, seed: int) -> dict[str, np.ndarray]:
        """Host inputs drawn from ``numpy.random.default_rng(seed)`` (float32 arrays)."""

    @abstractmethod
    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        """Float64 outputs from float64 ``inputs`` (as ``Instance.reference`` upcasts them)."""

    @abstractmethod
    def instance(self, inputs: dict[str, np.ndarray], library: Any) -> Instance:
        """GPU state for ``inputs`` (called by ``prepare``)."""

    def prepare(self, seed: int = 0, library: Any = None) -> Instance:
        """Draw the inputs of ``seed``, upload them, allocate outputs: ready to ``launch``."""
        from kernels.device import default_library, require_cupy

        require_cupy()
        return self.instance(self.make_inputs(seed), library or default_library())

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "id": self.id,
            "params": dict(self.params),
            "kernels": list(self.kernels),
            "precision": self.precision,
            "tolerance": self.tolerance,
            "flops": self.flops,
            "bytes": self.bytes,
            "tags": list(self.tags),
        }

    def __repr__(self) -> str:
        return f"<Workload {self.id}>"


class Instance(ABC):
    """A workload's inputs on the GPU and its output buffers.

    ``dev`` holds the uploaded inputs, ``out`` the buffers ``fetch`` reads, ``scratch`` other
    buffers the launch writes; ``inplace`` names the inputs the launch updates (``reset``
    restores them).
    """

    inplace: ClassVar[tuple[str, ...]] = ()

    def __init__(self, workload: Workload, inputs: dict[str, np.ndarray], library: Any):
        import cupy

        self.cp = cupy
        self.workload = workload
        self.inputs = inputs
        self.lib = library
        self.dev = {k: cupy.asarray(v) for k, v in inputs.items() if v.dtype == np.float32}
        self.out: dict[str, Any] = {}
        self.scratch: dict[str, Any] = {}
        self.setup()

    def empty(self, *shape: int) -> Any:
        return self.cp.empty(shape, dtype=self.cp.float32)

    @abstractmethod
    def setup(self) -> None:
        """Allocate ``out`` and ``scratch`` (and any launch state)."""

    @abstractmethod
    def launch(self) -> None:
        """Enqueue the work on the current stream; never synchronizes. This is what is timed."""

    def poison(self) -> None:
        """Fill every output and scratch buffer with the poison NaN."""
        for arr in (*self.out.values(), *self.scratch.values()):
            arr.view(self.cp.uint32).fill(POISON_BITS)

    def reset(self) -> None:
        """Restore the inputs that ``launch`` updates in place."""
        for name in self.inplace:
            self.dev[name].set(self.inputs[name])

    def fetch(self, xp: Any = np) -> dict[str, Any]:
        """The outputs, as NumPy arrays (``xp=numpy``, synchronizes) or CuPy arrays."""
        return {k: (v if xp is self.cp else self.cp.asnumpy(v)) for k, v in self.out.items()}

    def reference(self, xp: Any = np) -> dict[str, Any]:
        """The float64 reference for this instance's inputs, computed with ``xp``."""
        up = {
            k: (xp.asarray(v).astype(xp.float64) if v.dtype == np.float32 else v)
            for k, v in self.inputs.items()
        }
        return self.workload.reference(up, xp)

    def close(self) -> None:
        self.dev.clear()
        self.out.clear()
        self.scratch.clear()

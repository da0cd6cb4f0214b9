"""The contract between the suite and its users: ``Workload`` (a description, CPU-safe) and
``Instance`` (its GPU state). See the package docstring for the whole interface."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

TOLERANCES = {"fp32": 1e-4, "tf32": 2e-3}  # bound on the relative L2 error, per precision
POISON_BITS = 0x7FD15EA5  # a quiet NaN whose payload no kernel produces: "never written"
# Above either, correctness draws the inputs on the GPU and computes the float64 reference there
# (CuPy): on the H100 the host draws and uploads of the default suite's big shapes were most of
# the correctness stage's 20 s (benchmarks/runner_cost.py, 2026-11-26).
REFERENCE_ON_DEVICE_FLOPS = 2e10
REFERENCE_ON_DEVICE_BYTES = 1e8


INPUT_PLACES = ("host", "device")
_DEVICE_SEED_STREAM = 0x5EED  # the device draws' scalar seeds: a NumPy stream of their own


class HostDraws:
    """Inputs drawn on the host from ``numpy.random.default_rng(seed)``, in the order the workload
    asks for them: the correctness check's inputs of the shapes whose reference runs on the host
    (the same values in every version of the suite)."""

    xp = np

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def normal(self, shape: Any, scale: float | None = None) -> np.ndarray:
        """float32 N(0, scale^2) (N(0, 1) without a scale)."""
        x = self.rng.standard_normal(shape, dtype=np.float32)
        return x if scale is None else x * np.float32(scale)

    def uniform(self, shape: Any, low: float, high: float) -> np.ndarray:
        """float32 U(low, high) (drawn in float64, rounded)."""
        return self.rng.uniform(low, high, size=shape).astype(np.float32)

    def zeros(self, shape: Any) -> np.ndarray:
        return np.zeros(shape, dtype=np.float32)

    def seed63(self) -> np.ndarray:
        """A uint64 scalar in [0, 2^63): a seed for an in-kernel generator (dropout's Philox)."""
        return np.array(self.rng.integers(0, 2**63), dtype=np.uint64)


class DeviceDraws:
    """The same distributions, shapes and dtypes drawn on the GPU (``xp`` = CuPy; cuRAND through
    ``xp.random.RandomState(seed)``), for timing, whose kernels do not depend on the values: no
    host generation, no upload. Other values than HostDraws' for the same seed; scalar seeds
    (``seed63``) stay host NumPy scalars, from a NumPy stream of their own."""

    def __init__(self, seed: int, xp: Any) -> None:
        self.xp = xp
        self.rng = xp.random.RandomState(seed)
        self.host = np.random.default_rng((seed, _DEVICE_SEED_STREAM))

    def normal(self, shape: Any, scale: float | None = None) -> Any:
        x = self.rng.standard_normal(shape, dtype=self.xp.float32)
        if scale is not None:
            x *= self.xp.float32(scale)
        return x

    def uniform(self, shape: Any, low: float, high: float) -> Any:
        return self.rng.uniform(low, high, size=shape, dtype=self.xp.float32)

    def zeros(self, shape: Any) -> Any:
        return self.xp.zeros(shape, dtype=self.xp.float32)

    def seed63(self) -> np.ndarray:
        return np.array(self.host.integers(0, 2**63), dtype=np.uint64)


def draws(seed: int, xp: Any = np) -> HostDraws | DeviceDraws:
    """Host draws for ``xp`` = NumPy (the check's inputs), device draws for CuPy."""
    return HostDraws(seed) if xp is np else DeviceDraws(seed, xp)


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
    # How the runner times it: "cuda_events", or "cupti" (CUPTI's kernel records) for launches
    # of a few tens of microseconds, where the events' own 3-4 us would be much of the time.
    # Part of the definition, never of a measurement: a series is never compared across
    # methods, so a change of method starts a new series (kernels.workloads sets it per shape).
    timing_method: str = "cuda_events"

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
        """Whether ``check`` draws the inputs on the GPU and computes the float64 reference there
        with CuPy (``prepare(inputs="device")``)."""
        return self.flops > REFERENCE_ON_DEVICE_FLOPS or self.bytes > REFERENCE_ON_DEVICE_BYTES

    @abstractmethod
    def make_inputs(self, seed: int, xp: Any = np) -> dict[str, Any]:
        """The inputs of ``seed`` (float32 arrays; seeds as uint64 NumPy scalars): with ``xp`` =
        NumPy drawn on the host from ``numpy.random.default_rng(seed)`` (``HostDraws``), with
        ``xp`` = CuPy the same shapes, dtypes and distributions drawn on the GPU
        (``DeviceDraws``)."""

    @abstractmethod
    def reference(self, inputs: dict[str, Any], xp: Any = np) -> dict[str, Any]:
        """Float64 outputs from float64 ``inputs`` (as ``Instance.reference`` upcasts them)."""

    @abstractmethod
    def instance(self, inputs: dict[str, np.ndarray], library: Any) -> Instance:
        """GPU state for ``inputs`` (called by ``prepare``)."""

    def prepare(self, seed: int = 0, library: Any = None, *, inputs: str = "host") -> Instance:
        """Draw the inputs of ``seed``, upload them, allocate outputs: ready to ``launch``.

        ``inputs="host"`` (the default, and what correctness uses for the small shapes): NumPy
        draws uploaded, the float64 reference computable from them on the host.
        ``inputs="device"``: drawn on the GPU (same shapes, dtypes and distributions, other
        values), for timing and for the correctness of the big shapes (``reference_on_device``),
        where the seconds of host generation and upload would be all the cost."""
        from kernels.device import default_library, require_cupy

        if inputs not in INPUT_PLACES:
            raise ValueError(f"inputs must be one of {INPUT_PLACES}, not {inputs!r}")
        cupy = require_cupy()
        xp = cupy if inputs == "device" else np
        return self.instance(self.make_inputs(seed, xp), library or default_library())

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
            "timing_method": self.timing_method,
        }

    def __repr__(self) -> str:
        return f"<Workload {self.id}>"


class Instance(ABC):
    """A workload's inputs on the GPU and its output buffers.

    ``dev`` holds the uploaded inputs, ``out`` the buffers ``fetch`` reads, ``scratch`` other
    buffers the launch writes; ``inplace`` names the inputs the launch updates (``reset``
    restores them). Inputs drawn on the device are used in place, except those in ``inplace``,
    which get a copy (``reset`` copies them back on the device: a memcpy, no kernel).
    """

    inplace: ClassVar[tuple[str, ...]] = ()

    def __init__(self, workload: Workload, inputs: dict[str, Any], library: Any):
        import cupy

        self.cp = cupy
        self.workload = workload
        self.inputs = inputs
        self.lib = library
        self.dev: dict[str, Any] = {}
        for k, v in inputs.items():
            if v.dtype != np.float32:
                continue
            if isinstance(v, np.ndarray):
                self.dev[k] = cupy.asarray(v)
            else:  # drawn on the device: keep the original of what the launch updates
                self.dev[k] = v.copy() if k in self.inplace else v
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
        """Restore the inputs that ``launch`` updates in place (copies only: no kernel runs, so
        that a CUPTI-timed sample sees none)."""
        for name in self.inplace:
            source = self.inputs[name]
            if isinstance(source, np.ndarray):
                self.dev[name].set(source)
            else:
                self.dev[name].data.copy_from_device_async(source.data, source.nbytes)

    def as_xp(self, value: Any, xp: Any) -> Any:
        """An input (host or device) as an ``xp`` array."""
        if xp is np and not isinstance(value, np.ndarray):
            return self.cp.asnumpy(value)
        return xp.asarray(value)

    def fetch(self, xp: Any = np) -> dict[str, Any]:
        """The outputs, as NumPy arrays (``xp=numpy``, synchronizes) or CuPy arrays."""
        return {k: (v if xp is self.cp else self.cp.asnumpy(v)) for k, v in self.out.items()}

    def reference(self, xp: Any = np) -> dict[str, Any]:
        """The float64 reference for this instance's inputs, computed with ``xp``."""
        up = {
            k: (self.as_xp(v, xp).astype(xp.float64) if v.dtype == np.float32 else v)
            for k, v in self.inputs.items()
        }
        return self.workload.reference(up, xp)

    def close(self) -> None:
        self.dev.clear()
        self.out.clear()
        self.scratch.clear()

"""Outputs and references held by other array libraries (runner.worker.arrays, generic_check):
a PyTorch tensor on a GPU, in bfloat16, and a CuPy array are compared as float64 NumPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from runner.worker.arrays import to_host
from runner.worker.process import generic_check


class Tensor:
    """What a torch.Tensor offers that the check uses: on a device, in a dtype NumPy lacks."""

    def __init__(self, values: np.ndarray, device: str = "cuda:0", dtype: str = "bfloat16"):
        self.values, self.device, self.dtype = values, device, dtype
        self.calls: list[str] = []

    def detach(self) -> Tensor:
        self.calls.append("detach")
        return self

    def double(self) -> Tensor:
        self.calls.append("double")
        return Tensor(self.values.astype(np.float64), self.device, "float64")

    def cpu(self) -> Tensor:
        return Tensor(self.values, "cpu", self.dtype)

    def numpy(self) -> np.ndarray:
        if self.device != "cpu" or self.dtype != "float64":
            raise TypeError(f"can't convert {self.device} tensor of {self.dtype} to numpy")
        return self.values


class DeviceArray:
    """A CuPy array: NumPy may not read it implicitly, `get()` copies it to the host."""

    __module__ = "cupy._core.core"

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def get(self) -> np.ndarray:
        return self.values

    def __array__(self, *args: Any, **kw: Any) -> np.ndarray:
        raise TypeError("Implicit conversion to a NumPy array is not allowed")


def test_each_kind_comes_to_the_host_as_float64() -> None:
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    for held in (values, values.tolist(), Tensor(values), DeviceArray(values)):
        host = to_host(held)
        assert host.dtype == np.float64 and np.array_equal(host, values)
    tensor = Tensor(values)
    to_host(tensor)
    assert tensor.calls == ["detach", "double"]  # widened on its device before the copy


class Workload:
    precision, tolerance = "bf16", 1e-2

    def __init__(self, wrong: float) -> None:
        self.wrong = wrong

    def prepare(self, seed: int) -> Any:
        workload = self

        class Instance:
            out = np.zeros(4)

            def poison(self) -> None:
                self.out[:] = np.nan

            def launch(self) -> None:
                self.out[:] = [1.0, 2.0, 3.0, 4.0 + workload.wrong]

            def fetch(self) -> dict[str, Any]:
                return {"out": Tensor(self.out.astype(np.float32))}

            def reference(self) -> dict[str, Any]:
                return {"out": DeviceArray(np.array([1.0, 2.0, 3.0, 4.0]))}

            def close(self) -> None:
                pass

        return Instance()


@pytest.mark.parametrize(("wrong", "passed"), [(0.0, True), (1.0, False)])
def test_a_tensor_output_is_checked_against_a_device_reference(wrong: float, passed: bool) -> None:
    result = generic_check(Workload(wrong), seed=0)
    assert result["passed"] is passed
    assert result["error_norm"] == pytest.approx(wrong / np.sqrt(30.0))

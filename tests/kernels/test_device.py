"""kernels/device.py without a GPU: CuPy missing, or present without a device, is
``GPUUnavailable`` (a RuntimeError) from ``require_cupy``, ``gpu_available`` is False, and neither
the process-wide library nor a loaded build gets as far as building or loading anything. CuPy is
made unimportable (``sys.modules["cupy"] = None``) or stood in for by a module whose runtime
reports no device, so that these hold on a GPU host too; loading a real build is in
tests/kernels/test_gpu.py."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernels import device
from kernels.build import BuildResult
from kernels.device import GPUUnavailable, KernelLibrary, gpu_available, require_cupy


def no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError


def cupy_with(monkeypatch: pytest.MonkeyPatch, get_device_count) -> None:
    runtime = SimpleNamespace(getDeviceCount=get_device_count)
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))


def test_gpu_unavailable_is_a_runtime_error() -> None:
    assert issubclass(GPUUnavailable, RuntimeError)


def test_without_cupy_the_gpu_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    no_cupy(monkeypatch)
    with pytest.raises(GPUUnavailable, match="CuPy is not importable"):
        require_cupy()
    assert gpu_available() is False


def test_cupy_without_a_driver_is_no_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_driver() -> int:
        raise RuntimeError("cudaErrorInsufficientDriver")

    cupy_with(monkeypatch, no_driver)
    with pytest.raises(GPUUnavailable, match="no CUDA device: cudaErrorInsufficientDriver"):
        require_cupy()


def test_cupy_that_sees_zero_devices_is_no_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    cupy_with(monkeypatch, lambda: 0)
    with pytest.raises(GPUUnavailable, match=r"^no CUDA device$"):
        require_cupy()
    assert gpu_available() is False


def test_cupy_that_sees_a_device_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    cupy_with(monkeypatch, lambda: 1)
    assert require_cupy() is sys.modules["cupy"]
    assert gpu_available() is True


def test_the_default_library_needs_the_gpu_before_it_builds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_cupy(monkeypatch)
    monkeypatch.setattr(device, "_default", None)  # a library built earlier in this process
    monkeypatch.setenv("KERNELWATCH_BUILD_DIR", str(tmp_path))
    with pytest.raises(GPUUnavailable):
        device.default_library()
    assert device._default is None and list(tmp_path.iterdir()) == []  # nothing built


def test_loading_a_build_needs_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    no_cupy(monkeypatch)
    with pytest.raises(GPUUnavailable):
        KernelLibrary(BuildResult("sm_90", "nvcc", "12.4", None))

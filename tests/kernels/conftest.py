"""Fixtures of the kernel-suite tests: the GPU ones skip cleanly without CuPy or a GPU."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def library(tmp_path_factory):
    """The suite built (nvcc, else NVRTC) and loaded once per session; skips without a GPU."""
    from kernels.device import GPUUnavailable, require_cupy

    try:
        require_cupy()
    except GPUUnavailable as exc:
        pytest.skip(f"needs CuPy and a CUDA GPU: {exc}")
    from kernels import build
    from kernels.device import KernelLibrary

    if build.find_nvcc() is None:
        return KernelLibrary(build.build_nvrtc())
    return KernelLibrary(build.build(tmp_path_factory.mktemp("cubins")))

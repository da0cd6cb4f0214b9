"""The GPU side of the suite: CuPy (imported lazily) and the loaded kernel library.

``default_library()`` loads the build a runner left in ``$KERNELWATCH_BUILD_DIR`` (its
``build.json``), or builds the suite once per process (nvcc; NVRTC when nvcc is missing).
Code that built with ``kernels.build.build`` itself passes ``KernelLibrary(result)`` to
``Workload.prepare``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any

from kernels.build import BuildResult, build, build_nvrtc, find_nvcc, load_manifest


class GPUUnavailable(RuntimeError):
    """CuPy is not installed or no CUDA GPU is visible."""


def require_cupy() -> Any:
    """Import CuPy and check that a GPU is visible, or raise GPUUnavailable."""
    try:
        import cupy
    except ImportError as exc:
        raise GPUUnavailable(f"CuPy is not importable: {exc}") from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver
        raise GPUUnavailable(f"no CUDA device: {exc}") from exc
    if count < 1:
        raise GPUUnavailable("no CUDA device")
    return cupy


def gpu_available() -> bool:
    try:
        require_cupy()
    except GPUUnavailable:
        return False
    return True


class KernelLibrary:
    """Every kernel of a build, loaded as CuPy functions: ``lib["gemm_bias_act_fwd"]``."""

    def __init__(self, result: BuildResult):
        cupy = require_cupy()
        self.build = result
        if result.compiler == "nvrtc":
            modules = result.modules
        else:
            modules = {src: cupy.RawModule(path=path) for src, path in result.cubins.items()}
        self._functions = {
            name: modules[kb.source].get_function(name) for name, kb in result.kernels.items()
        }

    def __getitem__(self, name: str) -> Any:
        try:
            return self._functions[name]
        except KeyError:
            known = sorted(self._functions)
            raise KeyError(f"kernel {name!r} not in the build ({known})") from None

    def __contains__(self, name: str) -> bool:
        return name in self._functions

    def names(self) -> list[str]:
        return sorted(self._functions)


_lock = threading.Lock()
_default: KernelLibrary | None = None


def default_library() -> KernelLibrary:
    """The process-wide library, built on first use."""
    global _default
    with _lock:
        if _default is None:
            require_cupy()
            prebuilt = os.environ.get("KERNELWATCH_BUILD_DIR")
            # The runner builds once (python -m kernels.build) and every worker loads that.
            existing = load_manifest(prebuilt) if prebuilt else None
            if existing is not None:
                _default = KernelLibrary(existing)
            elif find_nvcc() is not None:
                out = prebuilt or tempfile.mkdtemp(prefix="kernelwatch-kernels-")
                _default = KernelLibrary(build(out))
            else:
                _default = KernelLibrary(build_nvrtc())
        return _default

"""Finding the NVIDIA command-line tools a runner host has, wherever they were installed."""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Iterable

NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")


def find_nvcc() -> str | None:
    """nvcc as a suite's build finds it: $NVCC, the PATH, $CUDA_HOME or $CUDA_PATH, then
    /usr/local/cuda."""
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc")]
    candidates += [os.path.join(os.environ[v], "bin", "nvcc")
                   for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]  # fmt: skip
    candidates.append("/usr/local/cuda/bin/nvcc")
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def _version_key(path: str) -> list[tuple[int, int | str]]:
    """`path` split into runs of digits (as numbers) and of the rest, for a natural order."""
    return [(0, int(part)) if part.isdigit() else (1, part)
            for part in re.findall(r"\d+|\D+", path)]  # fmt: skip


def find_tool(name: str, env_var: str, candidates: Iterable[str]) -> str | None:
    """$env_var, `name` on the PATH, or the newest match of a usual install location."""
    if explicit := os.environ.get(env_var):
        return explicit if os.access(explicit, os.X_OK) else None
    if found := shutil.which(name):
        return found
    for pattern in candidates:
        # the newest version first, numbers compared as numbers: 2025.10 after 2025.9
        for path in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def find_ncu() -> str | None:
    """$KERNELWATCH_NCU, `ncu` on the PATH, or a usual install location."""
    return find_tool("ncu", "KERNELWATCH_NCU", NCU_CANDIDATES)

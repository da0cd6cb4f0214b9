"""Finding the NVIDIA command-line tools a runner host has, wherever they were installed."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterable


def find_tool(name: str, env_var: str, candidates: Iterable[str]) -> str | None:
    """$env_var, `name` on the PATH, or the newest match of a usual install location."""
    if explicit := os.environ.get(env_var):
        return explicit if os.access(explicit, os.X_OK) else None
    if found := shutil.which(name):
        return found
    for pattern in candidates:
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None

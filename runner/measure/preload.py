"""The frameworks a waiting check or timing worker imports before its ids come (runner.measure.
phase.WarmWorkers): PyTorch and Triton, where the suite's Python imports them.

On an H200 (the doubt suite, 2026-12-07) the first workload `prepare`d in each timing process took
2.9 s where the same kind of workload after it took 0.33 s: the first one paid for `import torch`,
in every one of a commit's six to nine timing processes, one after the other. A waiting worker
imports it while the build, the check or the process before it runs, so the seconds pass where
nothing waits for them (a check worker has the build's seconds, a timing one more). Only installed
frameworks the suite's own files name are imported: a CUDA suite of CuPy kernels loads nothing
more. Never the suite's code (the build may still be writing it). $KERNELWATCH_PRELOAD names the
modules instead (comma-separated; empty: none).

A suite that calls `torch.compile` gets the compiler's modules too (COMPILER): a process's
first compile imports Dynamo and Inductor, which `import torch` does not. On CPU torch 2.13 (this
2-core machine, busy with the test suite; a warm Inductor cache) the doubt suite's block took
4.83 s from `torch.compile` to its first result in a fresh process and 1.81 s in one that had
imported them ahead (medians of 3 each, `python -m benchmarks.preload_compile --python PY`).
Their configuration is read from the environment when they are imported: a suite that sets
TORCHINDUCTOR_* in its own code before compiling names its modules in $KERNELWATCH_PRELOAD.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

PRELOAD_ENV = "KERNELWATCH_PRELOAD"
FRAMEWORKS = ("torch", "triton")
_IMPORTS = re.compile(rf"^\s*(?:import|from)\s+({'|'.join(FRAMEWORKS)})\b", re.M)
COMPILER = ("torch._dynamo", "torch._inductor.compile_fx")  # what a first torch.compile imports
_COMPILES = re.compile(r"\btorch\.compile\b|^\s*from\s+torch\s+import\s+(?:.*\b)?compile\b", re.M)
MAX_FILES = 2000  # a suite's Python files read; a vendored tree beyond that is not read on
MAX_FILE_BYTES = 1 << 20
SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", "build"}


def named_in(root: Path) -> list[str]:
    """The FRAMEWORKS the Python files under `root` import, in FRAMEWORKS' order, and after
    torch the COMPILER's modules where a file calls `torch.compile`."""
    found: set[str] = set()
    compiles = False
    read = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            read += 1
            if read > MAX_FILES:
                return _in_order(found, compiles)
            path = Path(folder, name)
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
                text = path.read_text(errors="replace")
            except OSError:
                continue
            found.update(_IMPORTS.findall(text))
            compiles = compiles or bool(_COMPILES.search(text))
            if len(found) == len(FRAMEWORKS) and compiles:
                return _in_order(found, compiles)  # nothing more to find
    return _in_order(found, compiles)


def _in_order(found: set[str], compiles: bool) -> list[str]:
    out = []
    for framework in FRAMEWORKS:
        if framework in found:
            out.append(framework)
            if framework == "torch" and compiles:
                out.extend(COMPILER)
    return out


def preload_for(root: Path) -> list[str]:
    """What a waiting timing worker of the suite at `root` imports: $KERNELWATCH_PRELOAD where
    set, else the installed frameworks its files import."""
    given = os.environ.get(PRELOAD_ENV)
    if given is not None:
        return [m.strip() for m in given.split(",") if m.strip()]
    return [m for m in named_in(root) if _installed(m)]


def _installed(module: str) -> bool:
    try:  # a submodule's spec imports its parent: torch._dynamo's, torch
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def preload(modules: list[str]) -> list[str]:
    """Import `modules` (in a waiting worker); the ones that imported. One that fails is left to
    the suite, whose own import of it then says why."""
    done = []
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:
            continue
        done.append(module)
    return done

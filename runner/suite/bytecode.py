"""Python's bytecode for a run's workers, kept in the runner's cache.

Every check, timing, profile and pair process imports torch afresh, and where the interpreter
finds no bytecode it can use beside torch's sources (a read-only install, bytecode never
written, or $PYTHONDONTWRITEBYTECODE) each one compiles them again: on an H100 host (PyTorch
2.11 under /opt/torch, 2026-12-07) a worker spent ~9 s in `compile` over ~2,600 of torch's
modules, in every process (cProfile of `benchmarks.runner_cost --suite benchmarks/doubt_suite`
under $KERNELWATCH_WORKER_PROFILE). So the workers write and read it in the runner's cache
($PYTHONPYCACHEPREFIX, `cache_dir`/python-bytecode) unless the host names a folder itself: the
first process of a host compiles, the rest read. Nothing is written beside anyone's sources, and
the bytecode of a run's worktree goes with it (`forget`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PREFIX_ENV = "PYTHONPYCACHEPREFIX"
DONT_WRITE_ENV = "PYTHONDONTWRITEBYTECODE"
FOLDER = "python-bytecode"


def folder(cache_dir: Path) -> Path:
    return cache_dir / FOLDER


def bytecode_env(cache_dir: Path) -> dict[str, str]:
    """The workers' variables: the cache's bytecode folder where the host set none, and
    bytecode written there even where the host's environment says not to write it (empty: unset,
    for Python)."""
    if os.environ.get(PREFIX_ENV):
        return {}
    env = {PREFIX_ENV: str(folder(cache_dir))}
    if os.environ.get(DONT_WRITE_ENV):
        env[DONT_WRITE_ENV] = ""
    return env


def forget(cache_dir: Path, tree: Path) -> None:
    """Drop the bytecode of `tree` (a worktree being removed) from the cache's folder: its
    files mirror the sources' absolute paths."""
    root = folder(cache_dir)
    for path in {tree.absolute(), tree.resolve()}:
        mirror = root / path.relative_to(path.anchor)
        shutil.rmtree(mirror, ignore_errors=True)

"""Run a suite's build and read what ptxas said about every kernel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.suite.bytecode import bytecode_env
from runner.suite.load import Suite, expand

LOG_TAIL = 20_000
# ptxas -v: "Compiling entry function 'NAME' for 'sm_90'", then "Used N registers, ... B smem",
# and "N bytes stack frame, N bytes spill stores, N bytes spill loads".
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


# Where compilers that run inside a workload's `prepare` keep what they compiled, each under the
# runner's build cache (kept between commits) unless the host set it: Triton's kernels, Inductor's
# generated code and FX graphs, PyTorch's C++/CUDA extensions (load_inline) and the driver's PTX
# JIT. Each keys its entries by what they depend on (source, options, versions, GPU), so a commit
# that does not change them compiles nothing, and every timing process after the first of a
# run finds them compiled.
COMPILE_CACHES = {
    "TRITON_CACHE_DIR": "triton",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TORCH_EXTENSIONS_DIR": "torch-extensions",
    "CUDA_CACHE_PATH": "cuda-jit",
}


def build_env(build_dir: Path, cache_dir: Path) -> dict[str, str]:
    """The environment of a run's build and workers: the build folder, the build cache
    (`cache_dir`/builds), the compile caches in it (COMPILE_CACHES) that the host has not set,
    and Python's bytecode in `cache_dir` (runner.suite.bytecode)."""
    builds = cache_dir / "builds"
    env = {"KERNELWATCH_BUILD_DIR": str(build_dir), "KERNELWATCH_BUILD_CACHE": str(builds),
           **bytecode_env(cache_dir)}  # fmt: skip
    for variable, folder in COMPILE_CACHES.items():
        if not os.environ.get(variable):
            env[variable] = str(builds / folder)
    return env


@dataclass
class BuildOutcome:
    status: str  # ok | failed
    seconds: float
    log_tail: str
    kernels: list[dict[str, Any]] = field(default_factory=list)

    def to_document(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "log_tail": self.log_tail,
            "kernels": self.kernels,
        }


def parse_ptxas(log: str) -> list[dict[str, Any]]:
    """Per-kernel resources from `-Xptxas -v` output (the last report of a kernel wins)."""
    kernels: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = {
                "kernel": m.group(1),
                "arch": m.group(2),
                "registers": 0,
                "shared_bytes": 0,
                "spill_stores_bytes": 0,
                "spill_loads_bytes": 0,
            }
            kernels[m.group(1)] = current
        elif current is not None and (m := _SPILL.search(line)):
            current["spill_stores_bytes"] = int(m.group(1))
            current["spill_loads_bytes"] = int(m.group(2))
        elif current is not None and (m := _USED.search(line)):
            current["registers"] = int(m.group(1))
            current["shared_bytes"] = int(m.group(2) or 0)
    return list(kernels.values())


def _declared(build_dir: Path) -> list[dict[str, Any]] | None:
    """A suite's build may write build.json with the per-kernel resources it measured."""
    path = build_dir / "build.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    entries = data.get("kernels", data) if isinstance(data, dict) else data
    if isinstance(entries, dict):
        entries = [{"kernel": name, **values} for name, values in entries.items()]
    keys = (
        "kernel",
        "arch",
        "registers",
        "shared_bytes",
        "spill_stores_bytes",
        "spill_loads_bytes",
        "compile_seconds",
    )
    return [{k: e[k] for k in keys if e.get(k) is not None} for e in entries]


def run_build(
    suite: Suite, build_dir: Path, env: dict[str, str] | None = None, timeout: float = 1800
) -> BuildOutcome:
    build_dir.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    started = time.monotonic()
    child_env = {**os.environ, **(env or {}), "KERNELWATCH_BUILD_DIR": str(build_dir)}
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(suite.root), child_env.get("PYTHONPATH", "")) if p
    )
    for template in suite.build:
        command = expand(template, build_dir=build_dir, python=sys.executable, root=suite.root)
        log.append(f"$ {command}")
        try:
            done = subprocess.run(
                command,
                shell=True,
                cwd=suite.root,
                env=child_env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            log.append(f"timed out after {timeout:.0f} s")
            out = (exc.stdout or b"") + (exc.stderr or b"")
            log.append(out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out))
            return BuildOutcome("failed", time.monotonic() - started, _tail(log))
        log.append(done.stdout + done.stderr)
        if done.returncode != 0:
            log.append(f"exit code {done.returncode}")
            return BuildOutcome("failed", time.monotonic() - started, _tail(log))
    text = "\n".join(log)
    try:
        kernels = _declared(build_dir)
    except (ValueError, KeyError, TypeError) as exc:
        log.append(f"build.json unreadable ({exc}); using the ptxas report in the log")
        kernels = None
    return BuildOutcome(
        "ok",
        time.monotonic() - started,
        _tail(log),
        kernels if kernels is not None else parse_ptxas(text),
    )


def _tail(log: list[str]) -> str:
    return "\n".join(log)[-LOG_TAIL:]

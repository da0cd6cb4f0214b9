"""What the compiler made of the kernels one launch ran, as a check worker sees it.

Per kernel the launch ran (in launch order, each once): its launch as CUPTI recorded it (threads
per block, registers per thread, shared memory, local memory per thread where registers spill;
runner.worker.launch_record) and, for a kernel Triton compiled in this process (a `@triton.jit`
kernel, or one Inductor generated), Triton's own metadata: `num_warps`, `num_stages`, the target,
and the config its autotuner chose. These are the knobs an author turns; the service names a
change of them first in an alert (service.analysis.knobs), where ncu's counters only say what
the change did.

Triton keeps every version it compiled of a kernel (an autotuner compiles each config under one
name); a kernel Inductor loaded from its cache with its own launcher has no CompiledKernel left,
and its versions are read from Inductor's autotuner, launcher by launcher. The version the
launch ran is the one whose warps, shared memory and registers match CUPTI's record of the
launch, narrowed by the autotuner's choice where there is one; where versions that differ in
what is recorded still match, their Triton facts are left out rather than guessed.
"""

from __future__ import annotations

import gc
import math
import sys
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

MAX_KERNELS = 1000  # the document's bound (service.schemas.document.WorkloadIn.compiled)
TRITON_FACTS = ("num_warps", "num_stages", "target")


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number < 2**31 else None


def _name(fn: Any) -> str | None:
    """The kernel name of what an autotuner wraps (a JITFunction, or heuristics around one)."""
    for _ in range(4):
        if fn is None:
            return None
        name = getattr(fn, "__name__", None)
        if isinstance(name, str):
            return name
        fn = getattr(fn, "fn", None)
    return None


class TritonKernels:
    """The Triton kernels compiled in this process, by name, and the configs autotuners chose."""

    def __init__(self, compiled: Iterable[Any], tuners: Iterable[Any]) -> None:
        self.versions: dict[str, list[Any]] = {}
        for kernel in compiled:
            name = getattr(kernel, "name", None) or getattr(
                getattr(kernel, "metadata", None), "name", None
            )
            if isinstance(name, str):
                self.versions.setdefault(name, []).append(kernel)
        self.chosen: dict[str, Any] = {}
        for tuner in tuners:
            config = getattr(tuner, "best_config", None)
            name = _name(getattr(tuner, "base_fn", None)) or _name(getattr(tuner, "fn", None))
            if config is not None and name:
                self.chosen[name] = config

    @classmethod
    def in_process(cls) -> TritonKernels | None:
        """Those of this process; None where Triton was never imported."""
        compiler = sys.modules.get("triton.compiler.compiler")
        kind = getattr(compiler, "CompiledKernel", None)
        if kind is None:
            return None
        autotuner = sys.modules.get("triton.runtime.autotuner")
        tuner_kind = getattr(autotuner, "Autotuner", None)
        heuristics = sys.modules.get("torch._inductor.runtime.triton_heuristics")
        inductor_kind = getattr(heuristics, "CachingAutotuner", None)
        compiled, tuners, inductor = [], [], []
        for obj in gc.get_objects():
            # By type, not isinstance: isinstance asks a weakref proxy for its referent's class,
            # and one whose referent is gone raises ReferenceError (a torch.compile'd process
            # holds such proxies: it failed the doubt suite's check on an H200, 2026-12-07).
            of = type(obj)
            if issubclass(of, kind):
                compiled.append(obj)
            elif tuner_kind is not None and issubclass(of, tuner_kind):
                tuners.append(obj)
            elif inductor_kind is not None and issubclass(of, inductor_kind):
                inductor.append(obj)
        held = {getattr(k, "name", None) or getattr(getattr(k, "metadata", None), "name", None)
                for k in compiled}  # fmt: skip
        versions, chosen = inductor_versions(inductor, held)
        return cls([*compiled, *versions], [*tuners, *chosen])

    def facts(self, launched: dict[str, Any]) -> dict[str, Any]:
        """Triton's facts of the version `launched` (a CUPTI record) ran; {} where the kernel
        is not Triton's, {"compiler": "triton"} alone where its version is not certain."""
        name = launched["kernel"]
        versions = self.versions.get(name)
        if not versions:
            return {}
        config = self.chosen.get(name)
        matching = {
            tuple(sorted(facts.items()))
            for kernel in versions
            if (facts := _version_facts(kernel)) is not None
            and _ran(facts, kernel, launched)
            and _chosen(facts, config)
        }
        out: dict[str, Any] = {"compiler": "triton"}
        if len(matching) == 1:
            out.update(dict(next(iter(matching))))
        if config is not None:
            out["config"] = str(config)[:1000]
        return out


def inductor_versions(autotuners: Iterable[Any], held: set[Any]) -> tuple[list[Any], list[Any]]:
    """Versions of the kernels Inductor loaded itself, from its autotuners' launchers (each
    keeps the config it was compiled with, its registers and shared memory): a kernel Inductor
    found in its cache is launched from the cubin (its static launcher) and no CompiledKernel of
    it is left in the process. Kernels a CompiledKernel is held of are left to it. With one
    launcher left (the autotuner's pick), its config is the one chosen."""
    versions: list[Any] = []
    chosen: list[Any] = []
    for tuner in autotuners:
        fn = getattr(tuner, "fn", None)
        name = _name(fn)
        launchers = list(getattr(tuner, "launchers", None) or [])
        if not name or name in held or not launchers:
            continue
        for launcher in launchers:
            config = getattr(launcher, "config", None)
            meta = SimpleNamespace(name=name, num_warps=getattr(config, "num_warps", None),
                                   num_stages=getattr(config, "num_stages", None),
                                   shared=getattr(launcher, "shared", None))  # fmt: skip
            versions.append(SimpleNamespace(name=name, metadata=meta,
                                            n_regs=getattr(launcher, "n_regs", None)))  # fmt: skip
        if len(launchers) == 1 and getattr(launchers[0], "config", None) is not None:
            chosen.append(SimpleNamespace(fn=fn, best_config=launchers[0].config))
    return versions, chosen


def _version_facts(kernel: Any) -> dict[str, Any] | None:
    meta = getattr(kernel, "metadata", None)
    warps, stages = _int(getattr(meta, "num_warps", None)), _int(getattr(meta, "num_stages", None))
    if warps is None:
        return None
    out: dict[str, Any] = {"num_warps": warps}
    if stages is not None:
        out["num_stages"] = stages
    target = getattr(meta, "target", None)
    backend, arch = getattr(target, "backend", None), getattr(target, "arch", None)
    if backend is not None and arch is not None:
        out["target"] = f"{backend}:{arch}"[:20]
    return out


def _ran(facts: dict[str, Any], kernel: Any, launched: dict[str, Any]) -> bool:
    """Whether this version is the one CUPTI saw launched: its threads, its dynamic shared
    memory (Triton launches with all of its shared memory dynamic) and its registers."""
    meta = getattr(kernel, "metadata", None)
    warp = _int(getattr(getattr(meta, "target", None), "warp_size", None)) or 32
    if facts["num_warps"] * warp != math.prod(launched["block"]):
        return False
    shared = _int(getattr(meta, "shared", None))
    if shared is not None and shared != launched["dynamic_shared"]:
        return False
    registers = _int(getattr(kernel, "n_regs", None))
    return registers is None or registers == launched["registers"]


def _chosen(facts: dict[str, Any], config: Any) -> bool:
    """Whether this version is of the config the autotuner chose (any, without one)."""
    if config is None:
        return True
    for knob in ("num_warps", "num_stages"):
        wanted = _int(getattr(config, knob, None))
        if wanted is not None and knob in facts and facts[knob] != wanted:
            return False
    return True


def compiled_kernels(launched: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The document's `compiled` for one launch's CUPTI records (launch_record.LaunchRecorder.
    launched): each kernel once, in launch order. What Triton says is extra: where reading it
    fails, the kernels keep what CUPTI recorded, and the check its verdict."""
    try:
        triton = TritonKernels.in_process() if launched else None
    except Exception:  # Triton's objects are not ours: a version that moved them is no error
        triton = None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for record in launched:
        name = record["kernel"]
        if name in seen:
            continue
        seen.add(name)
        entry: dict[str, Any] = {
            "kernel": name,
            "threads": math.prod(record["block"]),
            "registers": record["registers"],
            "shared_bytes": record["dynamic_shared"] + record["static_shared"],
        }
        if "local_bytes" in record:
            entry["local_bytes"] = record["local_bytes"]
        if triton is not None:
            try:
                entry.update(triton.facts(record))
            except Exception:
                triton = None
        out.append(entry)
        if len(out) == MAX_KERNELS:
            break
    return out

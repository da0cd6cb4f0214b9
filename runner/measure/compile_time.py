"""Where a workload's seconds went inside `torch.compile`: how many frames Dynamo compiled, how
long it traced their bytecode, and how long the backend (Inductor: AOTAutograd, its FX graph
cache, the generated kernels loaded or built) took, read from Dynamo's own timings
(`torch._dynamo.utils.compilation_time_metrics`, each timed step -> its durations, one a call)
before and after.

Issue 47 asks for Dynamo's tracing cost to be measured before anything avoids it: a compiled
block's `prepare` took 10-11 s in every timing process on an H200 with every cache hit, and the
log could not say whether Dynamo, Inductor's cache load or the inputs took it. Importing Dynamo
and Inductor is none of Dynamo's timed steps: on CPU torch 2.13 a real run of a compiled block
(`kernelwatch-runner run`, KERNELWATCH_PRELOAD=torch) prepared in 4.9-5.5 s a process of which
torch.compile's steps were 1.3-1.6 s, the rest those imports (runner.measure.preload now does
them ahead); where a prepare imported them, the log says so. A frame compiled while samples are
taken is worse than slow: those samples timed the compiler (a recompilation on a guard that
failed), and the stop reason says so.
"""

from __future__ import annotations

import sys
from typing import Any

FRAME = "_compile.compile_inner"  # one entry per frame Dynamo compiled
COMPILER_MODULE = "torch._inductor.compile_fx"  # loaded by a process's first compile
PARTS = {
    "tracing": "bytecode_tracing",
    "backend": "OutputGraph.call_user_compiler",
}


def _metrics() -> dict[str, list[float]]:
    """Dynamo's timings so far in this process, itself ({} where torch never compiled)."""
    utils = sys.modules.get("torch._dynamo.utils")
    metrics = getattr(utils, "compilation_time_metrics", None)
    return metrics if isinstance(metrics, dict) else {}


def _snapshot() -> dict[str, tuple[list[float], int]]:
    # The lists themselves, not copies: torch._dynamo.reset() (a suite may call it) empties the
    # dict, and a step timed after it starts a new list, all of whose entries are new.
    return {k: (v, len(v)) for k, v in _metrics().items() if isinstance(v, list)}


def _added(before: dict[str, tuple[list[float], int]], name: str) -> list[float]:
    now = _metrics().get(name)
    if not isinstance(now, list):
        return []
    seen, count = before.get(name, (None, 0))
    try:
        return [float(x) for x in (now[count:] if now is seen else now)]
    except (TypeError, ValueError):
        return []


class Watch:
    """Dynamo's timings from its start to each `result()`."""

    def __init__(self) -> None:
        self.before = _snapshot()
        self.set_aside: list[dict[str, Any]] = []
        self.compiler_loaded = COMPILER_MODULE in sys.modules

    def result(self) -> dict[str, Any]:
        """{"frames": n, "seconds": s, "tracing": s, "backend": s}; {} where nothing compiled."""
        frames = _added(self.before, FRAME)
        if not frames:
            return {}
        parts = {k: round(sum(_added(self.before, v)), 3) for k, v in PARTS.items()}
        found = {"frames": len(frames), "seconds": round(sum(frames), 3), **parts}
        for aside in self.set_aside:
            found = {k: round(v - aside.get(k, 0), 3) for k, v in found.items()}
        if found["frames"] <= 0:
            return {}
        # Importing Dynamo and Inductor is no step Dynamo times (seconds before its first one).
        return found | ({"imported": True} if not self.compiler_loaded else {})

    def set_apart(self, compiled: dict[str, Any]) -> None:
        """Leave out what another Watch inside this one saw (a fresh placement's own prepare,
        whose warm-up launches are no samples)."""
        if compiled:
            self.set_aside.append(compiled)


def describe(compiled: dict[str, Any]) -> str:
    """'torch.compile 8.1 s of it (2 frames; Dynamo tracing 0.3 s, backend 7.6 s)'; '' for {}."""
    if not compiled:
        return ""
    frames = compiled["frames"]
    imported = "; Dynamo and Inductor imported first, untimed" if compiled.get("imported") else ""
    return (
        f"torch.compile {compiled['seconds']:.1f} s of it ({frames} frame{'s' * (frames != 1)};"
        f" Dynamo tracing {compiled['tracing']:.1f} s, backend {compiled['backend']:.1f} s"
        f"{imported})"
    )


def during_sampling(compiled: dict[str, Any]) -> str:
    """The stop reason's note where Dynamo compiled while samples were taken; '' where not."""
    if not compiled:
        return ""
    return (
        f"torch.compile compiled {compiled['frames']} frame(s) while sampling"
        f" ({compiled['seconds']:.2f} s, a recompilation): those samples timed the compiler too"
    )

"""Injected-slowdown workloads for the H100 signal-quality harness (benchmarks/signal_quality_gpu).

The suite's memory-bound dropout kernel (`kernels.memory.Dropout`, kernel `dropout_fwd`) on a
problem whose element count is scaled up: a slowdown injected as more work, never as a sleep.
One base size per duration class; each injected magnitude is the same kernel on more elements.

The runner's worker imports this module like any suite's workloads module (`all_workloads()`),
so these are timed exactly as the suite is: child processes, warm-up, L2 flushed before every
sample, CUDA events or CUPTI, the stop rule. What to build comes from a *plan*, a JSON file
named by $KERNELWATCH_SQ_PLAN that the recording half writes (per class: the base element count
and, per magnitude, the scaled one); without it, the default plan scales the work by (1 + x).

Only NumPy and the suite's own modules are needed: this runs on a bare GPU host.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from kernels.memory import Dropout
from kernels.workload import Workload

PLAN_ENV = "KERNELWATCH_SQ_PLAN"
MAGNITUDES = (0.01, 0.02, 0.03, 0.05, 0.10)
DROP_P = 0.1
INPUT_TILE = 1 << 16  # distinct random values; the rest repeats them (cheap inputs, same traffic)

# (key, printed name, base element count). Cold (L2 flushed) on an H100 at ~3 TB/s, 8 bytes an
# element: about 90 us (the suite's own Dropout(1 << 25)), about 30 us and about 6 us.
CLASSES = (
    ("long", ">= 50 us", 1 << 25),
    ("mid", "10-50 us", 10_000_000),
    ("short", "< 10 us", 1_500_000),
)


def round4(n: float) -> int:
    """Element counts stay multiples of 4 (the kernel's float4 path covers every element)."""
    return max(4, round(n / 4) * 4)


class InjectedDropout(Dropout):
    """`dropout_fwd` on `n` elements, labelled with its duration class and injected slowdown.

    `inject` is the nominal slowdown (0 for the baseline); `n` is the work actually done.
    Inputs repeat a tile of random values: the kernel's time does not depend on the values, and
    drawing 40M normals in every process would cost more than timing them.
    """

    name = "sq_dropout"

    def __init__(self, cls: str, inject: float, n: int, *, tags: tuple[str, ...] = ()):
        Workload.__init__(self, tags=tags, cls=cls, inject=inject, n=n, p=DROP_P)
        self.n, self.p = n, DROP_P
        self.cls, self.inject = cls, inject
        # As the suite declares its short launches: CUPTI's kernel records below ~10 us.
        self.timing_method = "cupti" if cls == "short" else "cuda_events"

    def make_inputs(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        tile = rng.standard_normal(INPUT_TILE, dtype=np.float32)
        return {
            "x": np.resize(tile, self.n),
            "seed": np.array(rng.integers(0, 2**63), dtype=np.uint64),
        }


def default_plan() -> dict[str, Any]:
    """Work scaled by (1 + x), as the plan a recording without calibration uses."""
    return make_plan({key: {x: 1 + x for x in MAGNITUDES} for key, _, _ in CLASSES})


def make_plan(
    scales: dict[str, dict[float, float]], magnitudes: tuple[float, ...] = MAGNITUDES
) -> dict[str, Any]:
    """Per class, the element count of the base and of each magnitude x: the base's times
    `scales[class][x]` (1 + x where time is proportional to work; more where it is not)."""
    classes = []
    for key, name, base in CLASSES:
        sizes = {"0": base}
        for x in magnitudes:
            sizes[f"{x:g}"] = round4(base * scales[key][x])
        classes.append({"key": key, "name": name, "n": sizes})
    return {"magnitudes": list(magnitudes), "classes": classes}


def calibration_plan(steps: tuple[float, ...]) -> dict[str, Any]:
    """The base and (1 + step)-scaled sizes per class, to measure how time grows with work."""
    return make_plan({key: {s: 1 + s for s in steps} for key, _, _ in CLASSES}, steps)


def fit_curve(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(a, b) of the time change a*w + b*w**2 at work change w, least squares through the
    origin over measured (work scale, time ratio) points (every process's own ratios: their
    noise averages out in the fit)."""
    w = np.array([s - 1 for s, _ in points])
    y = np.array([r - 1 for _, r in points])
    (a, b), *_ = np.linalg.lstsq(np.column_stack([w, w * w]), y, rcond=None)
    return float(a), float(b)


def work_for_time(
    points: list[tuple[float, float]], target: float, bounds: tuple[float, float] = (0.25, 1.5)
) -> float:
    """The work scale at which the time ratio reaches `target` on the fitted curve (fit_curve):
    its smallest positive root, or the straight line through the origin where the quadratic has
    none. The implied d(time)/d(work), x / (s - 1), is kept within `bounds` (a noisy calibration
    cannot ask for absurd work)."""
    x = target - 1
    lo, hi = bounds
    a, b = fit_curve(points)
    roots = [r.real for r in np.roots([b, a, -x]) if abs(r.imag) < 1e-12 and r.real > 0]
    if abs(b) < 1e-12 and a > 0:
        roots = [x / a]
    if not roots:
        w = np.array([s - 1 for s, _ in points])
        y = np.array([r - 1 for _, r in points])
        slope = float(w @ y / (w @ w))
        roots = [x / slope] if slope > 0 else [x / lo]
    work = min(roots)
    return float(min(max(1 + work, 1 + x / hi), 1 + x / lo))


def plan_workloads(plan: dict[str, Any]) -> list[InjectedDropout]:
    out = []
    for c in plan["classes"]:
        for magnitude, n in c["n"].items():
            tags = ("signal_quality", c["key"], "baseline" if magnitude == "0" else "injected")
            out.append(InjectedDropout(c["key"], float(magnitude), int(n), tags=tags))
    return out


def load_plan() -> dict[str, Any]:
    path = os.environ.get(PLAN_ENV)
    if not path:
        return default_plan()
    with open(path) as f:
        return json.load(f)


def all_workloads() -> list[InjectedDropout]:
    """The plan's workloads (the suite protocol's entry point)."""
    return plan_workloads(load_plan())

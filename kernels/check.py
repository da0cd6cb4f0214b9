"""Correctness: relative L2 error against the float64 reference, with poisoned outputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels.workload import POISON_BITS, Workload


def rel_l2(out: Any, ref: Any, xp: Any = np) -> float:
    """||out - ref|| / ||ref|| in float64 (the absolute norm when ref is all zeros)."""
    d = out.astype(xp.float64) - ref
    num = math.sqrt(float((d * d).sum()))
    den = math.sqrt(float((ref * ref).sum()))
    return num / den if den > 0 else num


def compare_outputs(outputs: dict, reference: dict, xp: Any = np) -> dict[str, dict]:
    """Per output: rel_l2 error (inf when any element is not finite), unwritten and non-finite
    element counts. Unwritten elements are float32 elements still holding the poison NaN."""
    result = {}
    for name, ref in reference.items():
        if name not in outputs:
            raise KeyError(f"output {name!r} missing (have {sorted(outputs)})")
        out = outputs[name]
        if tuple(out.shape) != tuple(ref.shape):
            raise ValueError(f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
        unwritten = 0
        if out.dtype == np.float32:
            unwritten = int((out.view(xp.uint32) == xp.uint32(POISON_BITS)).sum())
        nonfinite = int((~xp.isfinite(out)).sum())
        err = math.inf if nonfinite else rel_l2(out, ref, xp)
        result[name] = {"error_norm": err, "unwritten": unwritten, "nonfinite": nonfinite}
    return result


def summarize(per_output: dict[str, dict], tolerance: float, precision: str) -> dict:
    """The check's verdict: the worst output's error against the tolerance; NaN never passes."""
    err = max((r["error_norm"] for r in per_output.values()), default=math.inf)
    unwritten = sum(r["unwritten"] for r in per_output.values())
    nonfinite = sum(r["nonfinite"] for r in per_output.values())
    passed = bool(unwritten == 0 and nonfinite == 0 and math.isfinite(err) and err <= tolerance)
    return {
        "passed": passed,
        "error_norm": float(err),
        "tolerance": float(tolerance),
        "norm": "rel_l2",
        "unwritten": int(unwritten),
        "precision": precision,
    }


def run_check(workload: Workload, seed: int = 0, library: Any = None) -> tuple[dict, dict]:
    """Prepare, poison, launch once, compare with the reference: (summary, per-output detail).
    The big shapes (``reference_on_device``) draw their inputs on the GPU and are compared there."""
    on_device = workload.reference_on_device
    inst = workload.prepare(seed, library, inputs="device" if on_device else "host")
    try:
        xp: Any = np
        if on_device:
            xp = inst.cp
        inst.poison()
        inst.launch()
        outputs = inst.fetch(xp)
        ref = inst.reference(xp)
        detail = compare_outputs(outputs, ref, xp)
    finally:
        inst.close()
    return summarize(detail, workload.tolerance, workload.precision), detail


def check(workload: Workload, seed: int = 0, library: Any = None) -> dict:
    """{"passed", "error_norm", "tolerance", "norm": "rel_l2", "unwritten", "precision"}.

    ``error_norm`` is the largest relative L2 error over the workload's outputs, ``inf`` when an
    output holds a NaN or an infinity (so that the dict stays valid JSON)."""
    return run_check(workload, seed, library)[0]

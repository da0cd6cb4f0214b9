"""Peak throughput of GPUs (datasheet numbers, dense) and what fraction of it a kernel reached.

A result document names the GPU and carries its SM count and clocks; FLOP and byte counts come
with each workload. Peaks are looked up by name; for an unknown GPU the FP32 peak is derived from
SM count x FP32 lanes x 2 x max SM clock and memory bandwidth stays unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

T = 1e12


@dataclass(frozen=True)
class DevicePeak:
    name: str
    flops: dict[str, float]  # per precision: FLOP/s (tensor cores where the precision uses them)
    bytes_per_s: float | None
    source: str  # "datasheet" or "derived from SM count and clock"


def _peak(name: str, bw: float | None, **flops: float) -> DevicePeak:
    return DevicePeak(name, {k: v * T for k, v in flops.items()}, bw, "datasheet")


# Matched in order: every needle must be a word of the GPU's name (case-insensitive; words are
# runs of letters and digits), so "L40" is not an "L4", nor "RTX A1000" an "A100".
_KNOWN: tuple[tuple[tuple[str, ...], DevicePeak], ...] = (
    (("h100", "pcie"), _peak("H100 PCIe", 2.0e12, fp64=25.6, fp32=51.2, tf32=378, fp16=756)),
    (("h100", "nvl"), _peak("H100 NVL", 3.9e12, fp64=30, fp32=60, tf32=418, fp16=835)),
    (("h100",), _peak("H100 SXM", 3.35e12, fp64=34, fp32=67, tf32=494.7, fp16=989.4)),
    (("h200",), _peak("H200", 4.8e12, fp64=34, fp32=67, tf32=494.7, fp16=989.4)),
    (("a100", "80gb"), _peak("A100 80GB", 2.039e12, fp64=9.7, fp32=19.5, tf32=156, fp16=312)),
    (("a100",), _peak("A100 40GB", 1.555e12, fp64=9.7, fp32=19.5, tf32=156, fp16=312)),
    (("l40s",), _peak("L40S", 0.864e12, fp32=91.6, tf32=183, fp16=362)),
    (("l40",), _peak("L40", 0.864e12, fp32=90.5, tf32=90.5, fp16=181)),
    (("l4",), _peak("L4", 0.3e12, fp32=30.3, tf32=60, fp16=121)),
    (("a10",), _peak("A10", 0.6e12, fp32=31.2, tf32=62.5, fp16=125)),
    (("4090",), _peak("RTX 4090", 1.008e12, fp32=82.6, fp16=165)),
)
_PRECISION = {"bf16": "fp16", "half": "fp16", "float16": "fp16", "float32": "fp32", "f32": "fp32"}


def device_peak(gpu: dict[str, Any], clocks: dict[str, Any] | None = None) -> DevicePeak | None:
    """The peaks of the GPU an environment describes, or None when nothing is known."""
    name = str(gpu.get("name") or "")
    words = set(re.findall(r"[a-z0-9]+", name.lower()))
    for needles, peak in _KNOWN:
        if all(n in words for n in needles):
            return peak
    sm_count, mhz = gpu.get("sm_count"), (clocks or {}).get("sm_max")
    major = str(gpu.get("compute_capability") or "0").split(".")[0]
    if not sm_count or not mhz or not major.isdigit():
        return None
    cc = str(gpu.get("compute_capability"))
    lanes = 64 if int(major) < 8 or cc == "8.0" else 128
    derived = float(sm_count) * lanes * 2 * float(mhz) * 1e6
    return DevicePeak(name or "unknown GPU", {"fp32": derived}, None, "derived from SM clock")


@dataclass(frozen=True)
class Achieved:
    flops_per_s: float | None
    bytes_per_s: float | None
    flop_fraction: float | None
    byte_fraction: float | None

    @property
    def bound(self) -> str | None:
        """Which roof the kernel is nearer: "compute" or "memory" (None if neither is known)."""
        f, b = self.flop_fraction, self.byte_fraction
        if f is None and b is None:
            return None
        return "compute" if (f or 0) >= (b or 0) else "memory"

    @property
    def fraction(self) -> float | None:
        fractions = [x for x in (self.flop_fraction, self.byte_fraction) if x is not None]
        return max(fractions) if fractions else None


def achieved(
    flops: float | None,
    bytes_moved: float | None,
    seconds: float,
    peak: DevicePeak | None,
    precision: str = "fp32",
) -> Achieved:
    """Throughput of one timed launch and its fraction of the device's peak."""
    fps = flops / seconds if flops and seconds > 0 else None
    bps = bytes_moved / seconds if bytes_moved and seconds > 0 else None
    roof_f = roof_b = None
    if peak is not None:
        key = _PRECISION.get(precision.lower(), precision.lower())
        roof_f = peak.flops.get(key) or peak.flops.get("fp32")
        roof_b = peak.bytes_per_s
    return Achieved(
        flops_per_s=fps,
        bytes_per_s=bps,
        flop_fraction=fps / roof_f if fps is not None and roof_f else None,
        byte_fraction=bps / roof_b if bps is not None and roof_b else None,
    )

"""Where a workload's time went when its kernels did not change.

A change to the Python around a workload's kernels (a synchronize, host work between the
kernels of a multi-kernel workload) moves its measured time while every kernel's compiled code,
launch and inputs stay what they were: the ncu captures say nothing that determines the kernels
changed, and the kernel timeline shows it in the time between them. The timeline holds each
kernel's time per launch of the workload (runner.measure.kernel_steps); what the workload's
timer measured beyond their sum is spent between and around them (launch gaps, host work,
synchronizations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class HostTime:
    """Per launch of the workload, in us: the kernels' time in the timeline, and the time the
    timer measured beyond it (between and around the kernels), base and head."""

    kernels_us: tuple[float, float]
    between_us: tuple[float, float]

    def as_dict(self) -> dict[str, list[float]]:
        return {"kernels_us": list(self.kernels_us), "between_us": list(self.between_us)}


def same_kernels(base: Mapping[str, str | None], head: Mapping[str, str | None]) -> bool:
    """Whether two runs captured the same kernels with the same determinants (kernel -> its
    determinants; None where a capture does not say what determined it)."""
    return bool(head) and base == head and all(d is not None for d in head.values())


def host_time(
    base_kernels_ns: Mapping[str, float],
    head_kernels_ns: Mapping[str, float],
    base_us: float | None,
    head_us: float | None,
) -> HostTime | None:
    """The kernels' time and the time beside them in both runs, where both have a timeline of
    the same kernels and a measured time (None otherwise)."""
    if base_us is None or head_us is None or not head_kernels_ns:
        return None
    if set(base_kernels_ns) != set(head_kernels_ns):
        return None
    base_k = sum(base_kernels_ns.values()) / 1000
    head_k = sum(head_kernels_ns.values()) / 1000
    return HostTime((base_k, head_k), (base_us - base_k, head_us - head_k))


def describe(evidence: HostTime | None) -> str:
    """The sentence an alert reads where the kernels are the same."""
    said = (
        "the kernels are the same as in the base run (their compiled code, launch and inputs); "
        "the time went to the host code around them or the environment"
    )
    if evidence is None:
        return said
    (kb, kh), (gb, gh) = evidence.kernels_us, evidence.between_us
    return (
        f"{said}: in the kernel timeline the kernels took {kb:.1f} → {kh:.1f} us a launch, "
        f"the time between and around them {gb:.1f} → {gh:.1f} us"
    )

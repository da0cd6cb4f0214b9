"""Software two runs of one fingerprint ran with that differs between them, and what a workload
chose differently when it was prepared (an autotuner's config): likely causes of a change that
no counter of the kernel explains (an upgrade of the suite's PyTorch, Triton or
CuPy, or of the nvcc that built it, keeps the series: the fingerprint names the GPU, driver and
CUDA runtime only, runner.host.environment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Environment keys of the result document whose values are versions a suite's work depends on.
VERSIONS = {"cupy_version": "CuPy", "nvcc_version": "nvcc"}
FRAMEWORKS = "frameworks"  # {"torch": "2.11.0", "triton": "3.6.0"}: the suite's own
NAMES = {"torch": "PyTorch", "triton": "Triton"}


def versions(environment: Mapping[str, Any]) -> dict[str, str]:
    """Name -> version of what the environment says it ran with."""
    out = {label: str(environment[key]) for key, label in VERSIONS.items() if environment.get(key)}
    frameworks = environment.get(FRAMEWORKS)
    if isinstance(frameworks, Mapping):
        out |= {NAMES.get(str(k), str(k)): str(v) for k, v in frameworks.items() if v}
    return out


def changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[dict[str, str | None]]:
    """What differs between the two environments' versions, by name (None: not there)."""
    return differences(versions(base), versions(head))


def differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[dict[str, str | None]]:
    """Name, base and head of every name whose value differs (None: not there), by name: the
    versions above, or what a workload chose in `prepare` (an autotuner's config)."""
    return [
        {"name": name, "base": before.get(name), "head": after.get(name)}
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]


def describe(change: Mapping[str, str | None]) -> str:
    return f"{change['name']} {change['base'] or 'absent'}→{change['head'] or 'absent'}"

"""Which kernels of a launch an attribution looks at: those its workload declares, by name or by
pattern (Triton's and Inductor's names are generated: `triton_poi_fused_*`), and every other
kernel the launch ran (an aten op's, cuBLAS's), which the timeline or ncu saw."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

WILDCARDS = frozenset("*?[")


def is_pattern(name: str) -> bool:
    return any(c in WILDCARDS for c in name)


def declared(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` is one the workload declared (a pattern matches it, or it is named)."""
    return any(fnmatchcase(name, p) if is_pattern(p) else name == p for p in patterns)


def attributed(patterns: list[str], seen: Iterable[str]) -> list[str]:
    """The kernels to attribute a workload's change to: those seen (in the order seen) that it
    declared, then the others seen; where nothing was seen, its declared names (patterns left
    out: they name nothing by themselves)."""
    seen = list(dict.fromkeys(seen))
    if not seen:
        return [p for p in patterns if not is_pattern(p)]
    mine = [k for k in seen if declared(k, patterns)]
    return mine + [k for k in seen if k not in mine]

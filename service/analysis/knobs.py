"""What the compiler made of a kernel, and what of it changed between two runs: the knobs an
author turns (Triton's `num_stages` and `num_warps`, the config an autotuner chose) and what
they decide (threads, shared memory, registers, local memory where registers spill).

For a Triton kernel these are the author's terms: "matmul_kernel: num_stages 3 → 1, shared
memory 96 → 32 KiB" says what was done where ncu's counters say only what it did
("shared-memory wavefronts +73%"). An alert names them first (service.evaluation.alerts.
attribution). A kernel that ptxas reported when the suite was built (a CUDA kernel) has its
registers, shared memory and spills named from that report, per kernel, as before: here only
its launch configuration is compared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# (fact, its name in words), in the order a person reads them: the knobs, then what they decide.
FACTS = (
    ("num_stages", "num_stages"),
    ("num_warps", "num_warps"),
    ("threads", "threads"),
    ("shared_bytes", "shared memory"),
    ("registers", "registers"),
    ("local_bytes", "local memory"),
    ("config", "config"),
    ("target", "target"),
)
PTXAS_FACTS = frozenset({"registers", "shared_bytes", "local_bytes"})
SHOWN = 3  # kernels named in a summary


def _pair(fact: str, base: Any, head: Any) -> str:
    """'96 → 32 KiB', '0 → 24 B/thread', '(BLOCK_M: 128) → (BLOCK_M: 64)', '3 → 1'."""
    if fact == "shared_bytes":
        kib = [f"{v / 1024:.0f}" if v % 1024 == 0 else f"{v / 1024:.1f}" for v in (base, head)]
        return f"{kib[0]} → {kib[1]} KiB"
    if fact == "local_bytes":
        return f"{base} → {head} B/thread"
    if fact == "config":
        return f"({base or 'none'}) → ({head or 'none'})"
    return f"{base} → {head}"


@dataclass(frozen=True)
class KnobChange:
    """One kernel's compiled facts that differ between the base and the head run."""

    kernel: str
    facts: tuple[tuple[str, Any, Any], ...]  # (fact, base, head)

    def describe(self) -> str:
        """'matmul_kernel: num_stages 3 → 1, shared memory 96 → 32 KiB'."""
        names = dict(FACTS)
        said = [f"{names[f]} {_pair(f, b, h)}" for f, b, h in self.facts]
        return f"{self.kernel}: {', '.join(said)}"

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "said": self.describe(),
                "facts": [{"fact": f, "base": b, "head": h} for f, b, h in self.facts]}  # fmt: skip


def _differences(base: Mapping[str, Any], head: Mapping[str, Any], skip: Collection[str]) -> list:
    out = []
    for fact, _ in FACTS:
        if fact in skip:
            continue
        b, h = base.get(fact), head.get(fact)
        # A fact one side does not know (an older runner, no Triton) is no change.
        if b is None or h is None or b == h or (fact in ("config", "target") and not (b or h)):
            continue
        if fact == "threads" and any(f == "num_warps" for f, _, _ in out):
            continue  # the warps said it
        out.append((fact, b, h))
    return out


def knob_changes(
    base: Mapping[str, Mapping[str, Any]],
    head: Mapping[str, Mapping[str, Any]],
    order: Sequence[str] = (),
    ptxas: Collection[str] = (),
) -> list[KnobChange]:
    """Per kernel both runs ran (by name), the compiled facts that differ; the kernels in
    `order` (the attribution's, most of the slowdown first) before the rest, by name.
    `ptxas`: kernels whose registers, shared memory and spills the build's ptxas report names."""
    rank = {k: i for i, k in enumerate(order)}
    changes = []
    for kernel in sorted(base.keys() & head.keys(), key=lambda k: (rank.get(k, len(rank)), k)):
        skip = PTXAS_FACTS if kernel in ptxas else ()
        facts = _differences(base[kernel], head[kernel], skip)
        if facts:
            changes.append(KnobChange(kernel, tuple(facts)))
    return changes


def describe(changes: Sequence[KnobChange]) -> str:
    """The first SHOWN kernels' changes, "; "-joined, and how many more."""
    said = "; ".join(c.describe() for c in changes[:SHOWN])
    more = len(changes) - SHOWN
    return said + (f"; {more} more kernels' compiled facts changed" if more > 0 else "")


def by_kernel(compiled: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """A run workload's stored `compiled` list as kernel -> facts."""
    return {str(c["kernel"]): dict(c) for c in compiled if isinstance(c, Mapping) and "kernel" in c}

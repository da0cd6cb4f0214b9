"""How much of a kernel's slowdown each candidate cause explains, from its ncu counters.

Pure functions on plain numbers (a kernel's counters are a mapping of ncu metric name to value),
tested on arrays; the SQL that finds the counters is in service.evaluation.alerts.attribution.

Every cause is turned into time, from the head's own achieved rates:

- **work on a unit** (DRAM bytes, L1/L2 sectors, shared wavefronts, instructions): the extra
  work divided by the rate the head achieved on that unit (its head total over the head's
  time), `T_head * extra / total_head`, weighted by how busy that unit was compared with the
  busiest unit of the kernel (`busy / busiest`): extra work on the unit the kernel is bound by
  costs its full time, extra work on an idle unit costs little. Sub-quantities (local memory,
  shared wavefronts, uncoalesced sectors) are divided by their unit's whole traffic, so that a
  large relative move of a small quantity explains little (a tensor pipe going from 0.02% to
  0.11% busy explains nothing).
- **occupancy**: a latency-bound kernel's throughput follows the warps it keeps in flight:
  `T_head * (1 - occupancy_head / occupancy_base)`, weighted by how latency-bound the head is
  (`1 - busiest`); named by the limiter that fell (registers, shared memory, block size).
- **parallelism**: SMs that sit idle (a smaller grid, fewer waves, a tail):
  `T_head * (1 - busy_head / busy_base)` with busy = SM active cycles / elapsed cycles.
- **atomics**: same-address atomics serialise in L2 and hide from throughput: the extra
  requests at the head's own rate, at most ATOMIC_SERIAL_NS each.

A cause's share is its explained time over the kernel's slowdown. Shares above 1 mean the
cause could explain all of it (and are shown as such); causes under MIN_SHARE are dropped,
however large their relative move.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_SHARE = 0.10  # a cause that explains less than this of the slowdown is not shown
ATOMIC_SERIAL_NS = 10.0  # the most one same-address atomic can cost in L2 (serialised)

DURATION = "gpu__time_duration.sum"
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
L2_SECTORS = "lts__t_sectors.sum"
L1_SECTORS = "l1tex__t_sectors.sum"
SHARED = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
CONFLICTS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
)
LOCAL = (
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
)
LOCAL_INSTRUCTIONS = ("smsp__inst_executed_op_local_ld.sum", "smsp__inst_executed_op_local_st.sum")
GLOBAL_ACCESS = {  # op -> (sectors, requests)
    "load": (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    ),
    "store": (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ),
}
ATOMICS = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
)
INSTRUCTIONS = "smsp__inst_executed.sum"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
LIMITS = {  # launch__occupancy_limit_* -> the cause kind when it is the one that fell
    "launch__occupancy_limit_registers": ("occupancy_registers", "registers"),
    "launch__occupancy_limit_shared_mem": ("occupancy_shared_memory", "shared memory"),
    "launch__occupancy_limit_warps": ("occupancy", "warps per block"),
    "launch__occupancy_limit_blocks": ("occupancy", "blocks per SM"),
}
ACTIVE, ELAPSED = "sm__cycles_active.avg", "sm__cycles_elapsed.avg"
# How busy each unit is (percent of its peak): the weights of the work causes.
BUSY = {
    "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
}


@dataclass
class Cause:
    """One candidate cause of a kernel's slowdown and the time it explains."""

    kind: str
    label: str
    explained_ns: float
    share: float = 0.0  # of the kernel's slowdown
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "explained_ns": self.explained_ns,
                "share": self.share, "evidence": self.evidence}  # fmt: skip


def _get(counters: Mapping[str, float], *names: str) -> float | None:
    """The sum of `names` (None when any is missing)."""
    values = [counters.get(n) for n in names]
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def _busy(counters: Mapping[str, float], unit: str) -> float:
    return max(0.0, min(1.0, float(counters.get(BUSY[unit], 0.0)) / 100))


def _weight(head: Mapping[str, float], *units: str) -> float:
    """How busy the busiest of `units` was, relative to the kernel's busiest unit."""
    busiest = max(_busy(head, u) for u in BUSY)
    return 1.0 if busiest <= 0 else max(_busy(head, u) for u in units) / busiest


def _extra(base: float | None, head: float | None) -> float:
    return 0.0 if base is None or head is None else max(0.0, head - base)


def work_explained(t_head: float, extra: float, total_head: float, weight: float) -> float:
    """Time the extra work costs at the head's achieved rate on its unit, weighted."""
    if extra <= 0 or total_head <= 0:
        return 0.0
    return t_head * min(1.0, extra / total_head) * weight


def sectors_per_request(counters: Mapping[str, float], op: str) -> float | None:
    sectors, requests = (counters.get(n) for n in GLOBAL_ACCESS[op])
    return None if not requests or sectors is None else float(sectors) / float(requests)


def candidates(base: Mapping[str, float], head: Mapping[str, float]) -> list[Cause]:
    """Every cause the counters of a kernel's base and head captures support, with the time
    (in the head's ncu nanoseconds) each explains; the ones that explain nothing left out."""
    t = float(head.get(DURATION) or 0.0)
    if t <= 0:
        return []
    causes = [
        c
        for c in (
            _dram(base, head, t),
            _access_pattern(base, head, t),
            _spills(base, head, t),
            _shared(base, head, t),
            _atomics(base, head, t),
            _instructions(base, head, t),
            _occupancy(base, head, t),
            _parallelism(base, head, t),
        )
        if c is not None and c.explained_ns > 0
    ]
    l2 = _l2_remainder(base, head, t, sum(c.explained_ns for c in causes if c.kind in _IN_L2))
    return [*causes, l2] if l2 is not None and l2.explained_ns > 0 else causes


_IN_L2 = ("dram", "access_pattern", "spills", "atomics")  # traffic that passes through L2


def rank(causes: list[Cause], slowdown_ns: float) -> list[Cause]:
    """`causes` with their share of `slowdown_ns`, largest first, those under MIN_SHARE gone."""
    if slowdown_ns <= 0:
        return []
    for c in causes:
        c.share = c.explained_ns / slowdown_ns
    return sorted((c for c in causes if c.share >= MIN_SHARE), key=lambda c: -c.explained_ns)


def _amount(value: float) -> str:
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{prefix}"
    return f"{value:.3g}"


def _moved(name: str, before: float, after: float, unit: str = "") -> str:
    """'DRAM bytes read 134M → 201M B (+50%)'."""
    rel = f" ({after / before - 1:+.0%})" if before else ""
    unit = f" {unit}" if unit else ""
    return f"{name} {_amount(before)} → {_amount(after)}{unit}{rel}"


def _dram(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    before, after = _get(base, *DRAM), _get(head, *DRAM)
    if before is None or after is None:
        return None
    explained = work_explained(t, _extra(before, after), after, _weight(head, "dram"))
    read_b, read_h = base.get(DRAM[0], 0.0), head.get(DRAM[0], 0.0)
    moved = ("DRAM bytes read", read_b, read_h) if read_h - read_b >= (after - before) / 2 else (
        "DRAM bytes", before, after)  # fmt: skip
    return Cause("dram", _moved(*moved), explained,
                 evidence={"bytes_base": before, "bytes_head": after})  # fmt: skip


def _l1_total(counters: Mapping[str, float]) -> float:
    return float(counters.get(L1_SECTORS, 0.0)) + float(counters.get(SHARED, 0.0))


def _access_pattern(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    """Only the sectors that more sectors per request cost: more requests at the same pattern
    are more work (DRAM, L2), not a worse pattern."""
    extra, moved = 0.0, []
    for op, (_, requests) in GLOBAL_ACCESS.items():
        before, after = sectors_per_request(base, op), sectors_per_request(head, op)
        if before is None or after is None or after <= before * 1.05:
            continue
        extra += float(head[requests]) * (after - before)
        moved.append((extra, f"global {op}s {before:.1f} → {after:.1f} sectors per request"))
    if not moved:
        return None
    explained = work_explained(t, extra, _l1_total(head), _weight(head, "l1", "l2"))
    label = "uncoalesced access: " + ", ".join(m for _, m in moved)
    return Cause("access_pattern", label, explained, evidence={"extra_sectors": extra})


def _spills(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    before, after = _get(base, *LOCAL), _get(head, *LOCAL)
    extra = _extra(before, after)
    if not extra:
        return None
    explained = work_explained(t, extra, _l1_total(head), _weight(head, "l1", "l2"))
    local = _moved("local-memory bytes", 32 * (before or 0.0), 32 * (after or 0.0))
    label = f"register spills: {local}"
    return Cause("spills", label, explained, evidence={"local_sectors_head": after})


def _shared(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    extra = _extra(_get(base, SHARED), _get(head, SHARED))
    if not extra:
        return None
    explained = work_explained(t, extra, _l1_total(head), _weight(head, "l1"))
    conflicts_b, conflicts_h = _get(base, *CONFLICTS), _get(head, *CONFLICTS)
    if _extra(conflicts_b, conflicts_h) >= extra / 2:
        label = _moved("shared-memory bank conflicts", conflicts_b or 0.0, conflicts_h or 0.0)
        return Cause("bank_conflicts", label, explained, evidence={"conflicts": conflicts_h})
    label = _moved("shared-memory wavefronts", float(base[SHARED]), float(head[SHARED]))
    return Cause("shared_memory", label, explained)


def _atomics(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    before, after = _get(base, *ATOMICS), _get(head, *ATOMICS)
    extra = _extra(before, after)
    if not extra or not after:
        return None
    at_own_rate = t * extra / after
    explained = min(at_own_rate, extra * ATOMIC_SERIAL_NS) * _weight(head, "l2")
    label = _moved("global atomic requests", before or 0.0, after)
    return Cause("atomics", label, explained)


def _instructions(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    """Instructions other than the local loads and stores that spills add (counted there)."""
    before, after = _get(base, INSTRUCTIONS), _get(head, INSTRUCTIONS)
    if before is None or after is None:
        return None
    before -= _get(base, *LOCAL_INSTRUCTIONS) or 0.0
    after -= _get(head, *LOCAL_INSTRUCTIONS) or 0.0
    explained = work_explained(t, _extra(before, after), after, _weight(head, "issue"))
    return Cause("instructions", _moved("instructions executed", before, after), explained)


def _occupancy(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    before, after = _get(base, OCCUPANCY), _get(head, OCCUPANCY)
    if not before or after is None or after >= before:
        return None
    busiest = max(_busy(head, u) for u in BUSY)
    explained = t * (1 - after / before) * (1 - busiest)
    kind, limiter = "occupancy", ""
    fell = [
        (float(head[n]) / float(base[n]), n)
        for n in LIMITS
        if base.get(n) and head.get(n) is not None and float(head[n]) < float(base[n])
    ]
    if fell:
        binding = min(float(head[n]) for n in LIMITS if head.get(n) is not None)
        bound = [(ratio, n) for ratio, n in fell if float(head[n]) == binding] or fell
        kind, limiter = LIMITS[min(bound)[1]]
    label = f"achieved occupancy {before:.0f}% → {after:.0f}%"
    if limiter:
        label += f", limited by {limiter}"
    theoretical = (base.get(THEORETICAL), head.get(THEORETICAL))
    return Cause(kind, label, explained, evidence={"theoretical": theoretical})


def _parallelism(base: Mapping[str, float], head: Mapping[str, float], t: float) -> Cause | None:
    def busy(c: Mapping[str, float]) -> float | None:
        active, elapsed = c.get(ACTIVE), c.get(ELAPSED)
        return float(active) / float(elapsed) if active is not None and elapsed else None

    before, after = busy(base), busy(head)
    if not before or after is None or after >= before * 0.98:
        return None
    label = f"SMs busy {before:.0%} → {after:.0%} of the time"
    grid = (base.get("launch__grid_size"), head.get("launch__grid_size"))
    if grid[0] and grid[1] and grid[0] != grid[1]:
        label += f" (grid {grid[0]:.0f} → {grid[1]:.0f} blocks)"
    return Cause("parallelism", label, t * (1 - after / before), evidence={"grid": grid})


def _l2_remainder(
    base: Mapping[str, float], head: Mapping[str, float], t: float, accounted: float
) -> Cause | None:
    """L2 traffic that DRAM, access pattern, spills and atomics do not already account for."""
    before, after = _get(base, L2_SECTORS), _get(head, L2_SECTORS)
    if before is None or after is None:
        return None
    explained = work_explained(t, _extra(before, after), after, _weight(head, "l2")) - accounted
    if explained <= 0:
        return None
    return Cause("l2", _moved("L2 sectors", before, after), explained)

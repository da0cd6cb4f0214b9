"""How much of each kernel's Nsight Compute capture a commit's metrics carry: the `ncu`
parameter of GET /api/v1/commits/{sha}/metrics.

A runner sends some 70 values a kernel (runner/profile/ncu.py METRICS) and ncu's rule findings:
every value of every kernel was four fifths of a 200-workload commit's answer (2.0 MB of 2.5).
No integration reads them (service/integrations take verdicts and alerts from the store); a
client of the API mostly wants the verdicts and, of a capture, the values that say where a
kernel stands against the GPU's peak, the work counters the service judges and ncu's findings:
the default, summary, half the answer. The commit page's per-kernel table shows every value and
asks for all (service.evaluation.reads.commit_metrics.commit_metrics).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, get_args

import orjson
from sqlalchemy.orm import Session

from service.analysis.work import WORK_COUNTERS
from service.schemas.metrics import NcuDetail
from service.store.reads import commit_reads as reads

DETAILS: tuple[str, ...] = get_args(NcuDetail)
# Speed of light, occupancy and memory traffic at a glance, then the work counters (their
# verdicts are in each kernel's `work`, their values here).
SUMMARY: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    *(c for c in WORK_COUNTERS if c != "dram__bytes_read.sum"),
)

# Per run workload, per kernel: (ncu metrics, ncu findings) in the answer's shape.
Captures = dict[int, dict[str, tuple[Any, Any]]]


def captures(session: Session, run_ids: list[int], detail: NcuDetail, raw: bool) -> Captures:
    """The runs' kernels' captures at `detail`: nothing read for none; for summary each
    kernel's values of SUMMARY (in its order) and its findings; for all every value.

    With `raw` what passes whole (all the values, the findings) is the stored JSON text as
    orjson fragments, written out as it is: parsing and writing it again was ~7 ms of a
    200-workload commit's answer."""
    out: Captures = defaultdict(dict)
    if detail == "none":
        return out
    for wl_id, kernel, metrics, findings in reads.ncu_captures(session, run_ids):
        if detail == "summary":
            stored = orjson.loads(metrics)
            values = {name: stored[name] for name in SUMMARY if name in stored}
        else:
            values = orjson.Fragment(metrics) if raw else orjson.loads(metrics)
        out[wl_id][kernel] = (values, orjson.Fragment(findings) if raw else orjson.loads(findings))
    return out

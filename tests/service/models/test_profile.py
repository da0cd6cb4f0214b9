"""service/models/profile.py on the migrated database: an ncu capture is one row per kernel
whose metrics and findings are JSON kept as written (an object's keys in the runner's order, where
PostgreSQL's jsonb would reorder them; findings in ncu's order), whose determinants may be
missing (older runners); captures and timeline entries go with their run's workload."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from service.models import NcuKernel, Run, RunWorkload, TimelineEntry
from tests.service.models.conftest import added, count

# Longest key first: jsonb stores keys shortest first, so a reordering would show.
METRICS = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 71.5, "unit": "%"},
    "dram__bytes_read.sum": {"value": 1.5e9, "unit": "byte"},
    "launch__registers_per_thread": {"value": 128, "unit": "register/thread"},
    "b": {"value": 1, "unit": ""},
    "a": {"value": 2, "unit": ""},
}
FINDINGS = [
    {"rule": "SOLBottleneck", "type": "WRN", "description": "memory bound",
     "estimated_speedup": 12.5, "speedup_type": "global"},
    {"rule": "Occupancy", "type": "OPT", "description": "registers",
     "estimated_speedup": 3.0, "speedup_type": "local"},
]  # fmt: skip


def test_a_capture_reads_back_as_written(session: Session, workload: RunWorkload) -> None:
    row = added(session, NcuKernel(run_workload_id=workload.id, kernel="gemm_bias_act_fwd",
                                   metrics=METRICS, findings=FINDINGS))  # fmt: skip
    session.commit()
    session.expire_all()
    read = session.get(NcuKernel, row.id)
    assert list(read.metrics) == list(METRICS) and read.metrics == METRICS
    assert read.findings == FINDINGS
    assert (read.determinants, read.profiled_at) == (None, None)  # an older runner's capture


@pytest.mark.parametrize("parent", ["workload", "run"])
def test_captures_and_timeline_go_with_their_workload(
    session: Session, run: Run, workload: RunWorkload, parent: str
) -> None:
    added(session, NcuKernel(run_workload_id=workload.id, kernel="k", metrics={}, findings=[]))
    added(session, TimelineEntry(run_workload_id=workload.id, kernel="k", calls=7,
                                 total_ns=1400.0, share=1.0))  # fmt: skip
    session.delete({"workload": workload, "run": run}[parent])
    session.flush()
    assert (count(session, NcuKernel), count(session, TimelineEntry)) == (0, 0)

"""The H100 recording of benchmarks/flush_gap.py, read on the CPU: how a few-microsecond
kernel's time differs between processes (docs/timing-studies.md, section 3)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from benchmarks import flush_gap

RECORDING = Path(flush_gap.__file__).parent / "results" / "flush_gap_h100.json.gz"


def test_a_short_kernels_process_offset_is_a_time_not_a_ratio() -> None:
    """Processes put w11's base anywhere in ~3.8-4.3 us and add its +1.55 us alike: the change
    in us agrees within 0.05 us between them while the relative change spreads over points,
    following the base (the faster the process, the larger the same us are of it)."""
    table = flush_gap.summary(json.loads(gzip.decompress(RECORDING.read_bytes()))["parts"])
    for condition, rows in table.items():
        r = rows["stream[cls=short,w=11]"]
        base, head = np.array(r["process_base_us"]), np.array(r["process_head_us"])
        relative = head / base - 1
        assert 1.5 < float(np.mean(head - base)) < 1.6, condition
        assert np.std(head - base, ddof=1) < 0.05, condition
        assert np.std(relative, ddof=1) > 0.02, condition
        assert np.corrcoef(base, relative)[0, 1] < -0.9, condition
    # Neither the flush nor a synchronize before the launch moves the change by a point.
    changes = [rows["stream[cls=short,w=11]"]["change"] for rows in table.values()]
    assert max(changes) - min(changes) < 0.01, changes
    assert "| truth+sync | stream[cls=short,w=11] |" in flush_gap.render(table)

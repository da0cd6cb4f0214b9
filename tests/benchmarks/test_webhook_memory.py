"""benchmarks/webhook_memory.py: its peak-memory reading, and a whole run at a small size against
the real `kernelwatch serve` it starts (each flood's answers and verdict in its table)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchmarks import webhook_memory


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(field)


def test_the_peak_is_the_processes_high_water_mark_in_mb() -> None:
    grown = b"\x01" * (64 << 20)  # written, so resident: the high-water mark is above it
    peak = webhook_memory.peak_mb(os.getpid())
    assert peak == pytest.approx(status_kb("VmHWM") / 1024, abs=1)
    assert peak >= status_kb("VmRSS") / 1024 - 1 >= 64
    del grown


def test_a_small_flood_run_prints_each_floods_answers_and_verdict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("KERNELWATCH_")]:
        monkeypatch.delenv(name)  # the server it starts is configured by the script alone
    assert webhook_memory.main(["--clients", "2", "--megabytes", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "| flood (2 x 1 MB) | peak before MB | peak after MB | growth MB | answers | verdict |",
        "|---|--:|--:|--:|---|---|",
    ]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    # No signature and a wrong one are refused before the body is kept; a signed body that is
    # no push is read, and refused as such.
    assert [(r[0], r[4], r[5]) for r in rows] == [
        ("unsigned", "{401: 2}", "PASS"),
        ("forged signature", "{401: 2}", "PASS"),
        ("signed, no push", "{422: 2}", "(scale)"),
    ]
    for name, before, after, growth, *_ in rows:
        assert all(re.fullmatch(r"\d+", v) for v in (before, after, growth)), name
        assert int(after) >= int(before) > 0
        assert int(growth) < webhook_memory.ALLOWED_MB


def test_arguments_are_whole_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        webhook_memory.main(["--megabytes", "1.5"])
    assert refused.value.code == 2
    assert "argument --megabytes: invalid int value: '1.5'" in capsys.readouterr().err

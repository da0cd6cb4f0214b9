"""Smoke test of the scale benchmark: tiny sizes, the whole path, a table with numbers."""

from __future__ import annotations

import re

import pytest

from benchmarks.service_scale import main


def test_prints_the_table_with_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    args = "--database sqlite --rows 2000 --series 20 --samples 12 --requests 5 --documents 5"
    main(args.split())
    out = capsys.readouterr().out
    row, pages = [line for line in out.splitlines() if line.startswith("| sqlite |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "2,000" and int(cells[2].replace(",", "")) > 2000
    for cell in cells[3:]:
        assert re.fullmatch(r"[\d.]+( / [\d.]+)?( (PASS|FAIL))?", cell), cell
    assert all(c.endswith(("PASS", "FAIL")) for c in cells[4:8])
    assert re.fullmatch(r"[\d.]+ / [\d.]+", cells[8])  # stored and analysed docs/s
    assert "fill:" in out and "commit metrics (20 workloads)" in out
    page_cells = [c.strip() for c in pages.strip("|").split("|")][1:]
    assert len(page_cells) == 5
    assert all(re.fullmatch(r"[\d.]+ / [\d.]+ (PASS|FAIL)", c) for c in page_cells), page_cells

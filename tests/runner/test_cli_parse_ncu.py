"""`kernelwatch-runner parse-ncu FILE` as a user runs it: the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner import cli

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
SCRIPT = Path(sys.executable).parent / "kernelwatch-runner"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("name", "page", "metric", "value"),
    [
        ("h100_selected_metrics_raw.csv", "raw", "gpu__time_duration.sum", 60416),
        ("h100_basic_sections_details.csv", "details", "Elapsed Cycles", 119460),
        ("h100_kernelwatch_pass_details.csv", "details", "lts__t_sector_hit_rate.pct", 99.45),
    ],
)
def test_parse_ncu_prints_the_launches_as_json(
    name: str, page: str, metric: str, value: float
) -> None:
    result = _run("parse-ncu", str(FIXTURES / name))
    assert result.returncode == 0, result.stderr
    launches = json.loads(result.stdout)
    assert len(launches) == 19
    first = launches[0]
    assert {"id", "kernel", "block", "grid", "metrics", "findings"} <= first.keys()
    assert (first["id"], first["kernel"], first["page"]) == (0, "gemm_bias_relu", page)
    assert first["metrics"][metric]["value"] == value
    assert launches[6]["kernel"].startswith("void gen_sequenced<curandStateXORWOW, float2,")
    if page == "details":
        finding = next(f for f in first["findings"] if f["rule"] == "AchievedOccupancy")
        assert finding["type"] == "OPT" and finding["speedup_type"] == "local"
        assert finding["estimated_speedup"] > 0


def test_parse_ncu_details_speedup_exact() -> None:
    result = _run("parse-ncu", str(FIXTURES / "h100_basic_sections_details.csv"))
    first = json.loads(result.stdout)[0]
    assert first["metrics"]["SM Active Cycles"] == {"value": 106548.17, "unit": "cycle"}
    assert [f["estimated_speedup"] for f in first["findings"]][:2] == [None, 17.07]


def test_parse_ncu_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    result = _run("parse-ncu", str(tmp_path / "absent.csv"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0
    assert "absent.csv: no such file" in result.stderr


def test_parse_ncu_without_header_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("gemm n=512 rel_err=4.062e-07\n==PROF== Disconnected from process 513\n")
    result = _run("parse-ncu", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0
    assert "no Nsight Compute CSV header" in result.stderr


def test_parse_ncu_header_only_prints_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text('"ID","Process ID","Kernel Name"\n')
    assert cli.main(["parse-ncu", str(path)]) == 0


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["parse-ncu"], ["no-such-command"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2
    assert "usage: kernelwatch-runner" in capsys.readouterr().err

"""benchmarks/kernel_suite.py on the CPU: its tables rendered from a saved `--json` result of the
suite's real workloads, and its arguments (the build and the timing need a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import kernel_suite
from kernels.build import BuildResult, KernelBuild
from kernels.timing import summary
from kernels.workloads import select

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = {w.id: w.to_dict() for w in select((), None)}
CUBLAS = "cublas_gemm[k=1024,m=1024,n=1024]"
FWD = "gemm_fwd[act=relu,k=1024,m=1024,n=1024]"
BWD = "gemm_bwd[act=relu,k=1024,m=1024,n=1024]"
SMALL_FWD = "gemm_fwd[act=relu,k=256,m=256,n=256]"
TRANSPOSE = "transpose[cols=4096,rows=4096]"
STEP = "train_step[batch=256,d_hidden=4096,d_in=1024,d_out=1024,p_drop=0.1]"


def row(wid: str, samples_ms: list[float], error: float | None = None) -> dict:
    """A row as the script writes it to --json; `error` None: run with --no-check."""
    out = {"workload": WORKLOADS[wid], "timing": summary(samples_ms), "samples_ms": samples_ms}
    if error is not None:
        out["check"] = {"passed": error < 1e-3, "error_norm": error, "unwritten": 0}
    return out


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    rows = [
        row(CUBLAS, [1.0, 0.9, 1.1], 1e-7),
        row(FWD, [1.25, 1.2, 1.3], 0.5),
        row(BWD, [4.0, 4.1, 3.9], 2e-6),
        row(SMALL_FWD, [0.1], 2e-6),
        row(TRANSPOSE, [0.5, 0.5]),
        row(STEP, [5.0], 1e-5)
        | {"kernel_breakdown": {"gelu": {"calls": 2, "total_ms": 1.0, "share": 0.25},
                                "gemm": {"calls": 4, "total_ms": 3.0, "share": 0.75}}},
    ]  # fmt: skip
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"build": {"arch": "sm_90"}, "rows": rows}))
    return path


def test_the_table_compares_each_gemm_with_cublas_of_its_shape(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel_suite.print_table(json.loads(saved.read_text())["rows"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ""
    assert lines[1].split() == ["workload", "median", "ms", "TFLOP/s", "GB/s", "%", "cuBLAS",
                                "check"]  # fmt: skip
    cells = {line.split()[0]: line.split()[1:] for line in lines[2:-1]}
    assert list(cells) == [CUBLAS, FWD, BWD, SMALL_FWD, TRANSPOSE, STEP]
    # median ms, TFLOP/s, GB/s, % of cuBLAS, check
    assert cells[CUBLAS] == ["1.0000", "2.15", "12.6", "-", "pass", "1.0e-07"]
    assert cells[FWD] == ["1.2500", "1.72", "13.4", "80.0%", "FAIL", "5.0e-01"]
    # gemm_bwd is two products of its shape: against two cuBLAS GEMMs.
    assert cells[BWD][3:] == ["50.0%*", "pass", "2.0e-06"]
    assert cells[SMALL_FWD][3] == "-"  # no cuBLAS row of 256^3 in this result
    assert cells[TRANSPOSE] == ["0.5000", "-", "268.4", "-", "-"]  # no FLOPs, not checked
    assert lines[-1] == "* gemm_bwd against two cuBLAS GEMMs of its shape (its two products)"


def test_the_breakdown_lists_a_train_steps_kernels_by_time(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel_suite.print_breakdowns(json.loads(saved.read_text())["rows"])
    assert capsys.readouterr().out.splitlines() == [
        "",
        f"kernel time of one {STEP} (events around each launch):",
        f"  {'gemm':24} calls=4     3.0000 ms   75.0%",
        f"  {'gelu':24} calls=2     1.0000 ms   25.0%",
    ]


def test_the_build_table_shows_what_nvrtc_does_not_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    build = BuildResult("sm_90", "nvcc", "12.6", "/tmp/b", kernels={
        "gemm": KernelBuild("gemm", "gemm.cu", 128, 49152, 0, 8, 4, 1.234),
        "relu": KernelBuild("relu", "act.cu", None, None, None, None, None, 0.5),
    })  # fmt: skip
    kernel_suite.print_build(build)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "build: nvcc 12.6 for sm_90"
    assert lines[1].split() == ["kernel", "regs", "smem", "B", "stack", "spill", "st/ld", "file",
                                "s"]  # fmt: skip
    assert lines[2].split() == ["gemm", "128", "49152", "0", "8/4", "1.23"]
    assert lines[3].split() == ["relu", "None", "None", "None", "None/None", "0.50"]


def test_rates_without_a_value_print_a_dash() -> None:
    assert kernel_suite.fmt_rate(None, "GB/s") == "-"
    assert kernel_suite.fmt_rate(1234.5678, "GB/s") == " 1234.57 GB/s"


def test_arguments() -> None:
    args = kernel_suite.parse_args(["--tag", "smoke", "--tag", "memory", "--define", "X=1"])
    assert (args.tag, args.define, args.match, args.samples, args.budget) == (
        ["smoke", "memory"], ["X=1"], None, 100, 1.5
    )  # fmt: skip
    assert not args.no_check and args.json is None


def test_help_and_a_bad_number_on_a_host_without_a_gpu() -> None:
    script = [sys.executable, str(ROOT / "benchmarks" / "kernel_suite.py")]
    helped = subprocess.run([*script, "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    assert "Build, check and time every workload of the kernel suite" in helped.stdout
    bad = subprocess.run([*script, "--samples", "many"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2
    assert "argument --samples: invalid int value: 'many'" in bad.stderr
    assert "Traceback" not in bad.stderr

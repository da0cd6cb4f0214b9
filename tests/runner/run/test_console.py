"""runner.run.console: what a person sees of a run. The summary table (one row per workload:
its id as `--only` takes it, rel. error, median, IQR/median, samples, and a rate in TFLOP/s
from its flops or GB/s from its bytes; a failed workload's row in red), and the progress bars,
whose stages complete each other, whose last cell names a workload's failure, and whose log
lines go out as plain text only where no bars are drawn. Rendered by rich into a string."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from runner.measure.phase import Outcome
from runner.run.console import RichProgress, summary_table


def workload(name: str, params: dict[str, Any], status: str = "ok", **extra: Any) -> dict:
    return {
        "name": name,
        "params": params,
        "status": status,
        "correctness": None,
        "timing": None,
        **extra,
    }


def timing(median: float, q1: float, q3: float, n: int) -> dict[str, Any]:
    return {"median": median, "q1": q1, "q3": q3, "n": n}


def document(*workloads: dict[str, Any]) -> dict[str, Any]:
    return {
        "suite": "default",
        "commit": {"sha": "0123456789abcdef" * 2 + "01234567"},
        "status": "failed",
        "workloads": list(workloads),
    }


def rendered(renderable: Any) -> list[str]:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(renderable)
    return [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]


def cells(lines: list[str], first: str) -> list[str]:
    (row,) = [line for line in lines if line.startswith(f"│ {first} ")]
    return [cell.strip() for cell in row.strip("│").split("│")]


def test_the_title_names_the_suite_the_short_sha_and_the_status() -> None:
    assert rendered(summary_table(document()))[0].strip() == "default at 0123456789ab: failed"


def test_a_compute_bound_row_gives_tflops_and_the_spread_over_the_median() -> None:
    gemm = workload(
        "gemm",
        {"n": 4096, "m": 4096},
        flops=2 * 4096**3,
        correctness={"error_norm": 3.1e-7},
        timing=timing(200.0, 199.0, 201.5, 40),
    )
    lines = rendered(summary_table(document(gemm)))
    # params sorted by name, brackets kept as text (no rich markup)
    assert cells(lines, "gemm[m=4096,n=4096]") == [
        "gemm[m=4096,n=4096]",
        "ok",
        "3.10e-07",
        "200.00 us",
        "1.25%",
        "40",
        "687.19 TFLOP/s",
    ]


def test_a_memory_bound_row_gives_gbps_and_flops_win_where_both_are_known() -> None:
    copy = workload("copy", {"n": 4096}, bytes=3 * 4 * 4096**2, timing=timing(100.0, 99, 101, 7))
    both = workload("both", {}, flops=10**9, bytes=10**9, timing=timing(1000.0, 990, 1010, 9))
    lines = rendered(summary_table(document(copy, both)))
    assert cells(lines, "copy[n=4096]")[-1] == "2013.3 GB/s"
    assert cells(lines, "both[]")[-1] == "1.00 TFLOP/s"  # 1 GFLOP in 1 ms


def test_a_workload_without_timing_or_correctness_leaves_its_cells_empty_and_is_red() -> None:
    crashed = workload("crash", {"n": 8}, status="crashed")
    table = summary_table(document(crashed, workload("ok", {}, timing=timing(1.0, 1, 1, 3))))
    assert cells(rendered(table), "crash[n=8]") == ["crash[n=8]", "crashed", "", "", "", "", ""]
    assert [row.style for row in table.rows] == ["red", None]


def test_stages_complete_each_other_and_the_last_cell_names_a_failure() -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    progress = RichProgress(console)
    progress.stage("check", 2)
    progress.advance("gemm[m=4096]")
    assert progress.bars.tasks[0].fields["last"] == "gemm\\[m=4096]"  # escaped: not markup
    progress.advance("adamw[n=8]", Outcome("timeout"))
    assert progress.bars.tasks[0].fields["last"] == "adamw\\[n=8] (timeout)"
    progress.stage("build")
    progress.stage("list")
    done, build, listing = progress.bars.tasks
    assert (done.completed, done.total) == (2, 2)
    assert (build.completed, build.total) == (1, 1)  # a stage of no count is one step
    assert listing.completed == 0


def test_log_lines_are_plain_text_where_no_bars_are_drawn() -> None:
    piped = Console(file=io.StringIO(), force_terminal=False, width=200)
    RichProgress(piped).log("timing: fma[n=256] [bold]x[/bold]")
    assert piped.file.getvalue() == "timing: fma[n=256] [bold]x[/bold]\n"  # type: ignore[attr-defined]
    terminal = Console(file=io.StringIO(), force_terminal=True, width=200)
    RichProgress(terminal).log("drawn by the bars instead")
    assert terminal.file.getvalue() == ""  # type: ignore[attr-defined]

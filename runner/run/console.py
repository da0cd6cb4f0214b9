"""Progress bars and the summary table for a person at a terminal (rich), plain lines otherwise."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from runner.measure.phase import Outcome
from runner.run.pipeline import Progress as RunProgress


class RichProgress(RunProgress):
    def __init__(self, console: Console) -> None:
        self.console = console
        self.bars = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=console,
            disable=not console.is_terminal,
        )
        self.task: Any = None

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def stage(self, name: str, total: int | None = None) -> None:
        if self.task is not None:
            self.bars.update(self.task, completed=self.bars.tasks[-1].total or 1)
        self.task = self.bars.add_task(name, total=total or 1, last="")

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        mark = "" if outcome is None or outcome.status == "ok" else f" ({outcome.status})"
        # escaped: a workload id's "[m=4096]" is not rich markup
        self.bars.update(self.task, advance=1, last=escape(f"{label}{mark}"))

    def log(self, line: str) -> None:
        if not self.console.is_terminal:
            self.console.print(line, markup=False, highlight=False)


def summary_table(document: dict[str, Any]) -> Table:
    table = Table(
        title=f"{document['suite']} at {document['commit']['sha'][:12]}: {document['status']}"
    )
    for column in ("workload", "status", "rel. error", "median", "IQR/median", "n", "rate"):
        table.add_column(column, justify="left" if column in ("workload", "status") else "right")
    for w in document["workloads"]:
        params = ",".join(f"{k}={v}" for k, v in sorted(w["params"].items()))
        err = w["correctness"]["error_norm"] if w["correctness"] else None
        t = w["timing"]
        median = rate = spread = n = ""
        if t:
            median = f"{t['median']:.2f} us"
            spread = f"{(t['q3'] - t['q1']) / t['median']:.2%}"
            n = str(t["n"])
            if w.get("flops"):
                rate = f"{w['flops'] / (t['median'] * 1e-6) / 1e12:.2f} TFLOP/s"
            elif w.get("bytes"):
                rate = f"{w['bytes'] / (t['median'] * 1e-6) / 1e9:.1f} GB/s"
        style = None if w["status"] == "ok" else "red"
        table.add_row(
            escape(f"{w['name']}[{params}]"),
            w["status"],
            "" if err is None else f"{err:.2e}",
            median,
            spread,
            n,
            rate,
            style=style,
        )
    return table

"""What a GPU history script (benchmarks/doubt_gpu.py, benchmarks/knobs_gpu.py) shares: its
command line (`--out`, `--resume`, `--table`, and `--truth-one` for its truth's processes) and
a history recorded over several device calls, each going on where the one before ran out of its
budget, from the work folder that call left (its repository, truth, service database and runner
cache: benchmarks/history_gpu.record_history pushes no commit whose run job exists)."""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.history_gpu import _load, log, record_history

PROGRESS = "progress.json"  # in --work: the commits, the truth, what each settled commit said


@dataclass(frozen=True)
class DeviceHistory:
    name: str  # the script's, as its messages say it
    saved_as: str  # the file in --out that holds what a run saved
    repository: str
    make_repository: Callable[[Path], list[dict[str, Any]]]
    measure_truth: Callable[[Path, list[dict[str, Any]]], dict[str, Any]]
    truth_one: Callable[[dict[str, Any]], dict[str, Any]]
    summarize: Callable[[dict[str, Any]], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]
    description: str
    default_work: Path


def record(h: DeviceHistory, work: Path, out: Path, budget: float,
           resume: bool) -> dict[str, Any] | None:  # fmt: skip
    """The history (or, with `resume`, its commits an earlier call did not reach, from `work`
    as that call left it); None where there is nothing to resume. A commit pushed with the next
    one (`with_next`) is done where that one settled."""
    deadline = time.monotonic() + budget
    if resume:
        if not (work / PROGRESS).exists():
            return None
        saved = json.loads((work / PROGRESS).read_text())
        earlier = saved.get("at_push", {})
        done = set(earlier) | set(saved.get("held", []))
        left = [c for c in saved["commits"] if c["sha"] not in done]
        log(f"resuming at commit {left[0]['index'] if left else '-'}: "
            f"{len(done)} of {len(saved['commits'])} settled before")  # fmt: skip
    else:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        commits = h.make_repository(work / "repo")
        started = time.monotonic()
        truth = h.measure_truth(work, commits)
        log(f"truth measured in {time.monotonic() - started:.0f} s")
        saved, earlier, left = {"commits": commits, "truth": truth}, {}, commits
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    try:
        found = record_history(work, left, deadline, h.repository, ncu_reuse=True,
                               earlier=earlier)  # fmt: skip
        seconds = {**saved.get("seconds", {}), **found.pop("seconds", {})}
        saved |= found | {"seconds": seconds}
        after = dict(itertools.pairwise(c["sha"] for c in saved["commits"]))
        pushed = saved["at_push"]
        saved["held"] = [c["sha"] for c in saved["commits"]
                         if c.get("with_next") and after.get(c["sha"]) in pushed]  # fmt: skip
    finally:  # what the agent and the service said, also of a history that broke off
        for name in ("agent.log", "service.log", "kernelwatch.db"):
            if (work / name).exists():
                shutil.copy(work / name, out / name)
    saved["history_seconds"] = saved.get("history_seconds", 0.0) + time.monotonic() - started
    (work / PROGRESS).write_text(json.dumps(saved, indent=1))
    (out / h.saved_as).write_text(json.dumps(saved, indent=1))
    return saved


def script(module: Any, saved_as: str, default_work: Path) -> DeviceHistory:
    """A history script's DeviceHistory from the module that defines its parts (REPOSITORY,
    make_repository, measure_truth, truth_one, summarize, render, its docstring)."""
    return DeviceHistory(
        name=Path(module.__file__).stem, saved_as=saved_as, repository=module.REPOSITORY,
        make_repository=module.make_repository, measure_truth=module.measure_truth,
        truth_one=module.truth_one, summarize=module.summarize, render=module.render,
        description=module.__doc__.split("\n\n")[0], default_work=default_work,
    )  # fmt: skip


def main(h: DeviceHistory, argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--truth-one"]:  # one process of the truth: SPEC PART --one
        spec, part = Path(argv[1]), Path(argv[2])
        part.write_text(json.dumps(h.truth_one(json.loads(spec.read_text()))))
        return 0
    p = argparse.ArgumentParser(description=h.description)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--out", type=Path, help="record on this GPU host; results go here")
    what.add_argument("--table", type=Path, help=f"print the table of a saved {h.saved_as}")
    p.add_argument("--budget", type=float, default=540.0, help="wall seconds for it all")
    p.add_argument("--work", type=Path, default=h.default_work)
    p.add_argument("--resume", action="store_true",
                   help="go on with the history an earlier --out left in --work")  # fmt: skip
    args = p.parse_args(argv)
    if args.resume and not args.out:
        p.error("--resume goes with --out")
    if args.table:
        saved = _load(args.table)
    else:
        saved = record(h, args.work.resolve(), args.out, args.budget, args.resume)
        if saved is None:
            print(f"{h.name}: nothing to resume in {args.work} ({PROGRESS} missing)",
                  file=sys.stderr)  # fmt: skip
            return 2
    summary = h.summarize(saved)
    (args.table.parent if args.table else args.out).joinpath("summary.json").write_text(
        json.dumps(summary, indent=1)
    )
    print(h.render(summary))
    return 0

"""The one ncu process of a run: a profile worker under ncu that launches each workload once.

ncu costs seconds to start and to write a report, so the whole run is profiled in ONE ncu
process: a worker in mode "profile" launches each selected workload once (no warm-up, nothing
else on the GPU), each inside an NVTX range "kernelwatch#<index>". `ncu --nvtx` records the
ranges and the details export names them in its "thread Domain:Push/Pop_Range:..." column,
which attributes every profiled launch to its workload (`launch_ranges`). The pass is bounded:
`--launch-count` allows LAUNCHES_PER_WORKLOAD launches per workload, runner.profile.ncu's fixed
metric set with the rule sections of SECTIONS below, `--clock-control none`, and optionally a kernel
filter (runner.profile.capture). Nothing is timed under ncu. ncu missing or refused
(ERR_NVGPUCTRPERM, ...) makes every workload's section "unavailable"; a workload that fails under
ncu gets "failed"; the run goes on either way.

Before its first workload a pass spends ~4.5 s on the H100 that no workload needs: ncu's own
start (0.5-1 s), Python, CuPy and the context under ncu (1-1.8 s), ncu's setup at the first
profiled kernel (~1.8 s beyond the ~0.37 s every launch costs), then the report (0.6 s) and its
export (0.6-0.8 s) (.dev5.sh of 2026-11-26). `NcuPass` starts the pass ahead of its workloads:
the worker warms up (a context, and one launch of WARM_UP_KERNEL, outside every range, which
ncu profiles and nothing attributes) and then waits for the ids on stdin; runner.run.pipeline starts
it when correctness starts and hands it the passing workloads when that ends.
Environment: $KERNELWATCH_NCU (the binary), $KERNELWATCH_NCU_SECTIONS (comma-separated),
$KERNELWATCH_NCU_KEEP (a folder that keeps the export and ncu's output).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runner.host.tools import find_ncu
from runner.profile import ncu, timeline

NVTX_MARK = "kernelwatch#"
LAUNCHES_PER_WORKLOAD = 16
# The rule sections of the pass. Measured on the H100 (ncu 2025.3.1, 12 workloads, 25
# launches): runner.profile.ncu.SECTIONS took 20 replay passes and 27.9 s; these four 17 passes and
# 16.6 s (the fixed metrics alone: 10 passes, 15.0 s), keeping the SOLBottleneck,
# LaunchConfiguration, (Theoretical/Achieved)Occupancy, CPIStall and ThreadDivergence rules.
# WorkloadDistribution, ComputeWorkloadAnalysis and MemoryWorkloadAnalysis cost the rest.
DEFAULT_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats")
SECTIONS = tuple(
    s
    for s in os.environ.get("KERNELWATCH_NCU_SECTIONS", ",".join(DEFAULT_SECTIONS)).split(",")
    if s
)
_MARK = re.compile(re.escape(NVTX_MARK) + r"(\d+)")
WARM_UP_KERNEL = "kernelwatch_ncu_warm_up"  # launched once, outside every range
INPUTS_RANGE = "kernelwatch-inputs"  # around the drawing of a workload's inputs: not profiled


def profile_command(
    exe: str,
    config: Path,
    report: Path,
    workloads: int,
    sections: tuple[str, ...] = SECTIONS,
    kernel_regex: str | None = None,
) -> list[str]:
    """The one bounded pass: runner.profile.ncu's command with NVTX recording, over a profile worker
    (with `kernel_regex`, only the launches of the kernels it matches are profiled)."""
    program = [sys.executable, "-m", "runner.worker", str(config)]
    budget = LAUNCHES_PER_WORKLOAD * max(workloads, 1)
    cmd = ncu.ncu_command(program, report=report, launch_count=budget, ncu=exe,
                         sections=sections, kernel_regex=kernel_regex)  # fmt: skip
    return [cmd[0], "--nvtx", "--nvtx-exclude", f"{INPUTS_RANGE}]", *cmd[1:]]


def worker_config(suite: Any, ids: list[str]) -> dict[str, Any]:
    """The profile worker's config; its inputs are drawn where a timing process draws them."""
    from runner.measure.sampling import timing_inputs

    return {
        "root": str(suite.root), "workloads": suite.workloads, "check": suite.check,
        "device": suite.device, "mode": "profile", "ids": ids, "seed": 0,
        "inputs": timing_inputs(suite.device),
    }  # fmt: skip


def launch_ranges(text: str) -> dict[int, int]:
    """ncu launch ID -> workload index, from the NVTX range column of an ncu CSV export."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return {}
    rows = csv.reader(lines[start:])
    header = next(rows)
    nvtx = [i for i, h in enumerate(header) if "Range" in h or "NVTX" in h]
    id_col = header.index("ID")
    out: dict[int, int] = {}
    for row in rows:
        if len(row) <= id_col or not row[id_col].strip().isdigit():
            continue
        cells = [row[i] for i in nvtx if i < len(row)] if nvtx else row
        marks = [m for cell in cells for m in _MARK.findall(cell)]
        if marks:
            out[int(row[id_col])] = int(marks[-1])  # the innermost range
    return out


def attribute(
    launches: list[dict[str, Any]], ranges: dict[int, int], count: int
) -> tuple[list[list[dict[str, Any]]], int]:
    """Launches per workload index, and how many launches no workload's range held."""
    groups: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    stray = 0
    for launch in launches:
        index = ranges.get(launch["id"]) if isinstance(launch["id"], int) else None
        if index is None or not 0 <= index < count:
            stray += 1
        else:
            groups[index].append(launch)
    return groups, stray


def worker_imports(text: str) -> list[str] | None:
    """The worktree's Python files the profile worker imported (its `done` line), or None
    where it never said (it died, or an older worker)."""
    for line in reversed(text.splitlines()):
        if line.startswith('{"event": "done"'):
            try:
                files = json.loads(line).get("files")
            except ValueError:
                return None
            return [str(f) for f in files] if isinstance(files, list) else None
    return None


def worker_messages(text: str) -> dict[str, dict[str, Any]]:
    """The worker's result/error lines among ncu's output, by workload id."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if line.startswith('{"event"'):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("event") in ("result", "error"):
                out[message["id"]] = message
    return out


def sections(
    ids: list[str], export: str, output: str, status: str, reason: str
) -> dict[str, dict[str, Any]]:
    """Each workload's ncu section from the details export and the pass's own output."""
    launches = ncu.parse_csv(export) if export.strip() else []
    groups, _ = attribute(launches, launch_ranges(export), len(ids))
    messages = worker_messages(output)
    budget = LAUNCHES_PER_WORKLOAD * max(len(ids), 1)
    out = {}
    for wid, group in zip(ids, groups, strict=True):
        message = messages.get(wid, {})
        if group:
            out[wid] = ncu.to_document_section(group, metrics=ncu.METRICS)
        elif message.get("event") == "error":
            why = f"the workload failed under ncu: {message.get('error', '')[-2000:]}"
            out[wid] = ncu.to_document_section([], "failed", why)
        elif status != "ok":
            out[wid] = ncu.to_document_section([], status, reason)
        elif message.get("result", {}).get("nvtx") is False:
            why = "no NVTX ranges in the worker (CuPy without NVTX): launches not attributable"
            out[wid] = ncu.to_document_section([], "failed", why)
        elif len(launches) >= budget:
            why = f"not profiled: the pass's launch budget ({budget}) was used up before it"
            out[wid] = ncu.to_document_section([], "failed", why)
        else:
            why = "no kernel launch of this workload was profiled"
            out[wid] = ncu.to_document_section([], "failed", why)
    return out


class NcuPass:
    """One ncu process over a profile worker, started now; `finish(ids)` hands it the ids of
    at most `workloads` workloads and gives their sections. Without `ids` now, the worker
    warms up and waits for them (runner.worker's wait mode), so that what ncu spends before
    the first workload passes while the caller does other work; `close` ends a pass unfinished."""

    def __init__(
        self,
        suite: Any,
        workloads: int,
        env: dict[str, str],
        kernel_regex: str | None = None,
        ids: list[str] | None = None,
    ) -> None:
        self.suite, self.exe, self.proc = suite, find_ncu(), None
        self.imported: list[str] | None = None  # what the worker imported of the worktree
        self.tmp = Path(tempfile.mkdtemp(prefix="kw-ncu-"))
        self.limit = 2 * suite.timing.timeout_seconds + 10 * max(workloads, 1)
        if self.exe is None:
            return
        waiting = ids is None  # the worker warms up, then reads its ids from stdin
        if kernel_regex is not None and waiting:  # its warm-up kernel is profiled too
            kernel_regex = kernel_regex.replace("(^|::)(", f"(^|::)({WARM_UP_KERNEL}|", 1)
        config = {**worker_config(suite, ids or []), **({"wait": True} if waiting else {})}
        (self.tmp / "worker.json").write_text(json.dumps(config))
        cmd = profile_command(self.exe, self.tmp / "worker.json", self.tmp / "profile",
                              workloads + waiting, kernel_regex=kernel_regex)  # fmt: skip
        self.output = open(self.tmp / "ncu-output.txt", "w")  # noqa: SIM115 (closed by finish)
        self.proc = subprocess.Popen(
            cmd, cwd=suite.root, env=timeline.child_env(suite, env), stdout=self.output,
            stderr=subprocess.STDOUT, stdin=subprocess.PIPE if waiting else None,
            start_new_session=True,
        )  # fmt: skip

    def finish(
        self,
        ids: list[str],
        log: Callable[[str], None],
        check_stop: Callable[[], None] = lambda: None,
    ) -> dict[str, dict[str, Any]]:
        """The ncu section of every workload in `ids` (in the order they are launched)."""
        try:
            return self._finish(ids, log, check_stop)
        finally:
            self.close()

    def _finish(
        self, ids: list[str], log: Callable[[str], None], check_stop: Callable[[], None]
    ) -> dict[str, dict[str, Any]]:
        if self.exe is None or self.proc is None:
            why = "ncu (Nsight Compute CLI) not found (PATH, $KERNELWATCH_NCU, /usr/local/cuda/bin)"
            return {wid: ncu.to_document_section([], "unavailable", why) for wid in ids}
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # it ended early: its output says why
                self.proc.stdin.write((json.dumps({"ids": ids}) + "\n").encode())
                self.proc.stdin.close()
        code = self._wait(check_stop)
        output = (self.tmp / "ncu-output.txt").read_text(errors="replace")
        self.imported = worker_imports(output)
        status, reason = ncu.classify_failure(code, output)
        if code is None:
            status, reason = "failed", f"ncu did not finish within {self.limit:g} s"
        rep = self.tmp / "profile.ncu-rep"
        export = ""
        if rep.is_file():
            done = subprocess.run(ncu.export_command(rep, "details", ncu=self.exe),
                                  capture_output=True, text=True, timeout=600)  # fmt: skip
            export = done.stdout
            if done.returncode != 0 and status == "ok":
                status, reason = "failed", f"ncu --import failed: {done.stderr[-2000:]}"
        elif status == "ok":
            status, reason = "failed", f"ncu wrote no report: {output[-2000:]}"
        if keep := os.environ.get("KERNELWATCH_NCU_KEEP"):  # a folder: keep what ncu said
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / "ncu-details.csv").write_text(export)
            (Path(keep) / "ncu-output.txt").write_text(output)
        if status != "ok":
            log(f"ncu pass: {status}: {reason[:300]}")
        return sections(ids, export, output, status, reason)

    def _wait(self, check_stop: Callable[[], None]) -> int | None:
        """The pass's exit code; None where it ran past the limit (its process group killed,
        as on a stop request, which raises)."""
        assert self.proc is not None
        deadline = time.monotonic() + self.limit
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                _kill(self.proc)
                return None
            check_stop()
            time.sleep(0.05)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _kill(self.proc)
        if self.proc is not None:
            self.output.close()
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        self.proc = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> NcuPass:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# --- the worker's side ------------------------------------------------------------------------


PREFETCH = 2  # workloads whose host inputs are drawn ahead of the one under ncu, on threads


class Launcher:
    """The profile worker: each workload launched once inside NVTX range kernelwatch#<index>.

    Its inputs are drawn where a timing process draws them
    (runner.measure.sampling.timing_inputs): on the GPU, just before its launch, inside the NVTX
    range INPUTS_RANGE, which the pass leaves out (`--nvtx-exclude`), so that the kernels
    drawing them run unprofiled. On the host, the default suite's big shapes took seconds each
    (its workloads, launched once without ncu: 15.1 s), which the PREFETCH threads hid behind
    ncu's replays only in part: on the GPU, a pass over every workload took 33.3 s instead of
    37.7 s (benchmarks/ncu_cost.py, two H100 hosts) and the filtered pass of a commit that
    changed the GEMM nine workloads launch 9.5 s instead of 12.5 s (benchmarks/runner_cost.py,
    2026-11-28); the counters ncu replays deterministically (instructions, warps, global
    requests and sectors) came out the same either way. Host inputs (a workload whose prepare
    takes no `inputs`, or $KERNELWATCH_TIMING_INPUTS=host) are prepared ahead on threads, each
    inside INPUTS_RANGE on its own thread: a prepare that compiles and launches (torch.compile)
    launches unprofiled there too."""

    def __init__(self, workloads: list[Any], seed: int, ranges: Any,
                 inputs: str | None = None) -> None:  # fmt: skip
        import cupy

        self.workloads, self.seed, self.ranges, self.inputs = workloads, seed, ranges, inputs
        # CuPy stages every upload from the host in pinned memory and pools it. Pinned memory is
        # memory a kernel can reach, so ncu saves and restores it around each profiled launch;
        # pooled, it only grows (to the largest uploads so far) and every later launch paid for
        # it: 0.37 s a small launch before the big training step, 0.75-1.4 s after (H100,
        # .dev2-.dev4 of 2026-11-28). Unpooled, a staging buffer is freed once its copy is done.
        cupy.cuda.set_pinned_memory_allocator(None)
        self.pool = ThreadPoolExecutor(max_workers=PREFETCH)
        self.pending: dict[int, Future] = {}

    def _on_gpu(self, w: Any) -> bool:
        from runner.measure.sampling import takes_inputs

        return self.inputs == "device" and takes_inputs(w)

    def _instance(self, index: int) -> Any:
        import cupy

        from runner.measure.sampling import prepare

        for ahead in range(index, min(index + 1 + PREFETCH, len(self.workloads))):
            w = self.workloads[ahead]
            if ahead not in self.pending and not self._on_gpu(w):
                self.pending[ahead] = self.pool.submit(self._prepared_ahead, w)
        if index in self.pending:
            return self.pending.pop(index).result()
        self.ranges.push(INPUTS_RANGE)
        try:
            instance = prepare(self.workloads[index], self.seed, self.inputs)
            cupy.cuda.Device().synchronize()
        finally:
            self.ranges.pop()
        return instance

    def _prepared_ahead(self, w: Any) -> Any:
        """`prepare` on a prefetch thread, inside INPUTS_RANGE on that thread (NVTX ranges are
        per thread): what it launches stays out of the pass. A torch.compile'd workload compiles
        and launches in prepare; profiled, those launches used up the pass's launch budget
        before the launches of the workloads themselves (the doubt suite on an H200,
        2026-12-07)."""
        from runner.measure.sampling import prepare

        self.ranges.push(INPUTS_RANGE)
        try:
            return prepare(w, self.seed, self.inputs)
        finally:
            self.ranges.pop()

    def __call__(self, w: Any, index: int) -> dict[str, Any]:
        import cupy

        instance = self._instance(index)
        device = cupy.cuda.Device()
        try:
            device.synchronize()
            self.ranges.push(f"{NVTX_MARK}{index}")
            try:
                instance.launch()
                device.synchronize()
            finally:
                self.ranges.pop()
        finally:
            instance.close()
            # ncu saves and restores device memory around its replay passes: give back what
            # CuPy's pool still holds of this workload.
            cupy.get_default_memory_pool().free_all_blocks()
        return {"nvtx": bool(getattr(self.ranges, "available", False))}


def warm_up_profiler() -> None:
    """In a waiting profile worker: one launch of WARM_UP_KERNEL, outside every range, which
    ncu profiles (its setup at the first profiled kernel, ~1.8 s on the H100, passes now)."""
    import cupy

    source = f'extern "C" __global__ void {WARM_UP_KERNEL}(int* x) {{ if (x[0] < 0) x[0] = 0; }}'
    flag = cupy.zeros(1, dtype=cupy.int32)  # a memset: no kernel
    cupy.RawKernel(source, WARM_UP_KERNEL)((1,), (1,), (flag,))
    cupy.cuda.Device().synchronize()

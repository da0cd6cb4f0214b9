"""The profiling stage of a CUDA run: kernel timelines (runner.timeline), then one ncu pass.

ncu costs seconds to start and to write a report, so the whole run is profiled in ONE ncu
process: a worker in mode "profile" launches each selected workload once (no warm-up, nothing
else on the GPU), each inside an NVTX range "kernelwatch#<index>". `ncu --nvtx` records the
ranges and the details export names them in its "thread Domain:Push/Pop_Range:..." column,
which attributes every profiled launch to its workload (`launch_ranges`). The pass is bounded:
`--launch-count` allows LAUNCHES_PER_WORKLOAD launches per workload, runner.ncu's fixed metric
set with the rule sections of SECTIONS below, `--clock-control none`. Nothing is timed under
ncu. ncu missing or refused (ERR_NVGPUCTRPERM, ...) makes every workload's section
"unavailable"; a workload that fails under ncu gets "failed"; the run goes on either way.
Measured on the H100 (default suite, 38 workloads): the pass takes 50-55 s, ~0.8 s of ncu
per profiled launch; so only the workloads whose code changed since an earlier commit on this
host are profiled, the others keep that commit's section, and where only some kernels of a
workload changed, the pass profiles only their launches (runner.profile_reuse).
Environment: $KERNELWATCH_NCU (the binary), $KERNELWATCH_NCU_SECTIONS (comma-separated),
$KERNELWATCH_NCU_KEEP (a folder that keeps the export and ncu's output),
$KERNELWATCH_NCU_REUSE (0: profile every workload).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runner import ncu, profile_reuse, timeline
from runner.profile_reuse import Found, ProfileReuse, merge
from runner.tools import find_tool

NVTX_MARK = "kernelwatch#"
LAUNCHES_PER_WORKLOAD = 16
NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")
# The rule sections of the pass. Measured on the H100 (ncu 2025.3.1, 12 workloads, 25
# launches): runner.ncu.SECTIONS took 20 replay passes and 27.9 s; these four 17 passes and
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


def capture(
    suite: Any,
    records: list[Any],
    env: dict[str, str],
    progress: Any,
    log: Callable[[str], None],
    check_stop: Callable[[], None],
    reuse: ProfileReuse | None = None,
) -> None:
    """Fill `record.timeline` (timeline workloads) and `record.ncu` (all) of passing workloads,
    reusing, where `reuse` has one, the section of an earlier commit with the same code."""
    traced = [r for r in records if suite.wants_timeline(r.info)]
    if traced:
        progress.stage("timeline", len(traced))
        timeline.capture(suite, traced, env, lambda wid: progress.advance(wid), log)
        sources = sorted({r.timeline["source"] for r in traced if r.timeline})
        log(f"timeline: {sum(bool(r.timeline) for r in traced)} of {len(traced)} ({sources})")
        check_stop()
    progress.stage("ncu", len(records))
    started = time.monotonic()
    found = {r.info["id"]: f for r in records if reuse and (f := reuse.lookup(r.info))}
    whole = {wid: f.section for wid, f in found.items() if not f.stale}
    partial = {wid: f for wid, f in found.items() if f.stale}
    ids = [r.info["id"] for r in records if r.info["id"] not in whole]
    sections = _profile(suite, ids, partial, env, log, check_stop)
    for record in records:
        wid = record.info["id"]
        record.ncu = whole.get(wid) or sections[wid]
        if reuse and wid in sections:
            reuse.store(record.info, sections[wid])
        progress.advance(wid)
    counts = {s: sum(x["status"] == s for x in sections.values()) for s in ("ok", "failed")}
    only = f" ({len(partial)} of them only their changed kernels)" if partial else ""
    log(f"ncu: {counts['ok']} ok, {counts['failed']} failed of {len(ids)} workloads profiled"
        f"{only}, {len(whole)} reused (unchanged since an earlier commit) in "
        f"{time.monotonic() - started:.1f} s")  # fmt: skip
    if reuse:
        reuse.prune()


def _profile(
    suite: Any,
    ids: list[str],
    partial: dict[str, Found],
    env: dict[str, str],
    log: Callable[[str], None],
    check_stop: Callable[[], None],
) -> dict[str, dict[str, Any]]:
    """The sections of `ids`. Where every one of them is a partial match (`partial`), one pass
    profiles only the changed kernels' launches and merges them into the earlier sections; a
    workload whose changed kernels that pass missed (a name ncu's filter did not match) is
    profiled whole in a second pass. Otherwise one pass profiles every launch of every one."""
    if not ids:
        return {}
    stale = sorted({k for wid in ids if wid in partial for k in partial[wid].stale})
    pattern = kernel_filter(stale) if all(wid in partial for wid in ids) else None
    sections = profile_workloads(suite, ids, env, log, check_stop, kernel_regex=pattern)
    if pattern is None:
        return sections
    missed = []
    for wid in ids:
        merged = merge(partial[wid], sections[wid])
        if merged is not None:
            sections[wid] = merged
        elif sections[wid]["status"] != "unavailable":
            missed.append(wid)
    if missed:
        log(f"ncu: the changed kernels of {len(missed)} workloads were not profiled by the "
            "filtered pass; profiling them whole")  # fmt: skip
        sections.update(profile_workloads(suite, missed, env, log, check_stop))
    return sections


def kernel_filter(kernels: list[str]) -> str | None:
    """ncu's --kernel-name regex (matched against the function name) for the launches of
    `kernels` (names as the export prints them), or None where one has no plain identifier."""
    names = sorted({profile_reuse.search_name(k) for k in kernels})
    if not names or not all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        return None
    return f"(^|::)({'|'.join(names)})(<|$)"


def reuse_for(
    cache: Path, worktree: Path, build_dir: Path, commit: str, environment: dict[str, Any]
) -> ProfileReuse | None:
    """Reuse of earlier commits' sections for this run (runner.profile_reuse), unless turned
    off; the key holds this pass's configuration and the runner's own code."""
    if not profile_reuse.enabled():
        return None
    runner_code = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                   for p in sorted(Path(__file__).parent.glob("*.py"))}  # fmt: skip
    config = {"metrics": list(ncu.METRICS), "sections": list(SECTIONS),
              "launches": LAUNCHES_PER_WORKLOAD, "runner": runner_code}  # fmt: skip
    return ProfileReuse(cache, worktree, build_dir, commit, environment, config)


def find_ncu() -> str | None:
    """$KERNELWATCH_NCU, `ncu` on the PATH, or a usual install location."""
    return find_tool("ncu", "KERNELWATCH_NCU", NCU_CANDIDATES)


def profile_command(
    exe: str,
    config: Path,
    report: Path,
    workloads: int,
    sections: tuple[str, ...] = SECTIONS,
    kernel_regex: str | None = None,
) -> list[str]:
    """The one bounded pass: runner.ncu's command with NVTX recording, over a profile worker
    (with `kernel_regex`, only the launches of the kernels it matches are profiled)."""
    program = [sys.executable, "-m", "runner.worker", str(config)]
    budget = LAUNCHES_PER_WORKLOAD * max(workloads, 1)
    cmd = ncu.ncu_command(program, report=report, launch_count=budget, ncu=exe,
                         sections=sections, kernel_regex=kernel_regex)  # fmt: skip
    return [cmd[0], "--nvtx", *cmd[1:]]


def worker_config(suite: Any, ids: list[str]) -> dict[str, Any]:
    return {
        "root": str(suite.root), "workloads": suite.workloads, "check": suite.check,
        "device": suite.device, "mode": "profile", "ids": ids, "seed": 0,
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


def profile_workloads(
    suite: Any,
    ids: list[str],
    env: dict[str, str],
    log: Callable[[str], None],
    check_stop: Callable[[], None] = lambda: None,
    kernel_regex: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The ncu section of every workload in `ids`, from one bounded ncu pass (of the launches
    of the kernels `kernel_regex` matches, where given)."""
    exe = find_ncu()
    if exe is None:
        why = "ncu (Nsight Compute CLI) not found (PATH, $KERNELWATCH_NCU, /usr/local/cuda/bin)"
        return {wid: ncu.to_document_section([], "unavailable", why) for wid in ids}
    limit = 2 * suite.timing.timeout_seconds + 10 * len(ids)
    with tempfile.TemporaryDirectory(prefix="kw-ncu-") as tmp:
        config, report = Path(tmp) / "worker.json", Path(tmp) / "profile"
        config.write_text(json.dumps(worker_config(suite, ids)))
        cmd = profile_command(exe, config, report, len(ids), kernel_regex=kernel_regex)
        code, output = _supervised(cmd, suite.root, timeline.child_env(suite, env), limit,
                                   check_stop, Path(tmp))  # fmt: skip
        status, reason = ncu.classify_failure(code, output)
        if code is None:
            status, reason = "failed", f"ncu did not finish within {limit:g} s"
        rep = Path(f"{report}.ncu-rep")
        export = ""
        if rep.is_file():
            done = subprocess.run(ncu.export_command(rep, "details", ncu=exe),
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


def _supervised(
    cmd: list[str], cwd: Path, env: dict[str, str], limit: float,
    check_stop: Callable[[], None], tmp: Path,
) -> tuple[int | None, str]:  # fmt: skip
    """Run `cmd` in its own process group; kill the group at the limit or when stopped."""
    out_path = tmp / "ncu-output.txt"
    with open(out_path, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + limit
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    _kill(proc)
                    return None, out_path.read_text(errors="replace")
                check_stop()
                time.sleep(0.2)
        except BaseException:
            _kill(proc)
            raise
    return proc.returncode, out_path.read_text(errors="replace")


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# --- the worker's side ------------------------------------------------------------------------


PREFETCH = 2  # workloads prepared ahead of the one under ncu, each on a thread of its own


class Launcher:
    """The profile worker: each workload launched once inside NVTX range kernelwatch#<index>,
    the next PREFETCH ones prepared meanwhile on threads (their host-side input generation
    overlaps ncu's replays, the big training step's seconds included; what those threads do is
    outside every range and launches no kernel, so nothing of it is profiled or attributed).
    Inputs are the host ones, as in correctness: a kernel drawing them on the GPU would be
    profiled too (the pass has no kernel filter)."""

    def __init__(self, workloads: list[Any], seed: int, ranges: Any) -> None:
        self.workloads, self.seed, self.ranges = workloads, seed, ranges
        self.pool = ThreadPoolExecutor(max_workers=PREFETCH)
        self.pending: dict[int, Future] = {}

    def _prepare(self, index: int) -> Future:
        if index not in self.pending:
            self.pending[index] = self.pool.submit(self.workloads[index].prepare, self.seed)
        return self.pending[index]

    def __call__(self, w: Any, index: int) -> dict[str, Any]:
        import cupy

        prepared = self._prepare(index)
        for ahead in range(index + 1, min(index + 1 + PREFETCH, len(self.workloads))):
            self._prepare(ahead)
        try:
            instance = prepared.result()
        finally:
            del self.pending[index]
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

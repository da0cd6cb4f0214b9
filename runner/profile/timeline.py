"""Kernel timeline of the training-step workloads: per kernel, calls, total time, share of a step.

What `nsys stats --report cuda_gpu_kern_sum` shows, per step (STEPS cold steps traced, L2 flushed
before each as in timing, after warm-up). Nsight Systems is used where it produces a report:
it is probed once per host and binary (`nsys profile` of a trivial program; a failure is
remembered in ~/.cache/kernelwatch/nsys-probe.json), then each workload is profiled with
`--capture-range cudaProfilerApi` and read with `nsys stats` (or `nsys export --type sqlite`).
Otherwise CUPTI kernel activity records (cupti-python) trace the steps: the first timing
process does it after its samples (runner.measure.sampling.trace_steps), else a worker in mode
"timeline". The section says which source was used and why: {"source", "reason", "kernels":
[{"kernel", "calls", "total_ns", "share"}]}.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.host.tools import find_tool
from runner.measure.kernel_steps import STEPS, from_totals
from runner.measure.phase import run_phase

NSYS_CANDIDATES = (
    "/usr/local/cuda/bin/nsys",
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",  # bundled with ncu: may not report
)
PROBE_CACHE = Path.home() / ".cache" / "kernelwatch" / "nsys-probe.json"


def section(source: str, reason: str, kernels: list[dict[str, Any]]) -> dict[str, Any]:
    return {"source": source, "reason": reason, "kernels": kernels}


def parse_kern_sum(text: str) -> list[tuple[str, int, float]]:
    """(name, instances, total ns) rows of `nsys stats --report cuda_gpu_kern_sum --format csv`."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if "Instances" in ln and "Name" in ln), None)
    if start is None:
        return []
    rows = []
    for row in csv.DictReader(lines[start:]):
        total_key = next((k for k in row if k and k.startswith("Total Time")), None)
        try:
            name = row["Name"].strip()
            count = int(float(row["Instances"].replace(",", "")))
            total = float(row[total_key].replace(",", "")) if total_key else 0.0
        except (KeyError, ValueError, AttributeError):
            continue
        if name:
            rows.append((name, count, total))
    return rows


def sqlite_kernels(path: Path) -> list[tuple[str, int, float]]:
    """The same rows from `nsys export --type sqlite` (CUPTI_ACTIVITY_KIND_KERNEL)."""
    with sqlite3.connect(path) as db:
        columns = {r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
        name = "demangledName" if "demangledName" in columns else "shortName"
        query = (
            f"SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            f"JOIN StringIds s ON k.{name} = s.id GROUP BY s.value"
        )
        return [(str(n), int(c), float(t)) for n, c, t in db.execute(query)]


# --- Nsight Systems ---------------------------------------------------------------------------


def find_nsys() -> str | None:
    """$KERNELWATCH_NSYS, `nsys` on the PATH, or a usual install location."""
    return find_tool("nsys", "KERNELWATCH_NSYS", NSYS_CANDIDATES)


def profile_command(nsys: str, report: Path, program: list[str]) -> list[str]:
    return [
        nsys, "profile", "--trace", "cuda,nvtx", "--sample", "none", "--cpuctxsw", "none",
        "--capture-range", "cudaProfilerApi", "--capture-range-end", "stop",
        "--force-overwrite", "true", "--output", str(report), *program,
    ]  # fmt: skip


def stats_command(nsys: str, report: Path) -> list[str]:
    return [nsys, "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv",
            "--force-export", "true", str(report)]  # fmt: skip


def export_command(nsys: str, report: Path, out: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
            "--output", str(out), str(report)]  # fmt: skip


def _run(cmd: list[str], timeout: float, **kw: Any) -> tuple[int, str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s: {' '.join(cmd[:3])}"
    except OSError as exc:
        return -1, str(exc)
    return done.returncode, done.stdout + done.stderr


def _tail(text: str, limit: int = 300) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-3:])[-limit:]


def probe(nsys: str, cache: Path = PROBE_CACHE, timeout: float = 60.0) -> tuple[bool, str]:
    """Whether this nsys writes a report here; a failure is remembered for this binary."""
    try:
        st = os.stat(nsys)
        key = f"{nsys}:{int(st.st_mtime)}:{st.st_size}"
    except OSError as exc:
        return False, f"nsys at {nsys} cannot be used: {exc}"
    known = _read_json(cache)
    if key in known:
        return False, f"{known[key]['reason']} (probed {known[key]['at']})"
    with tempfile.TemporaryDirectory(prefix="kw-nsys-probe-") as tmp:
        out = Path(tmp) / "probe"
        cmd = [nsys, "profile", "--trace", "cuda", "--sample", "none", "--cpuctxsw", "none",
               "--force-overwrite", "true", "--output", str(out),
               sys.executable, "-c", "pass"]  # fmt: skip
        code, text = _run(cmd, timeout, cwd=tmp)
        if Path(f"{out}.nsys-rep").is_file():
            return True, ""
        leftovers = sorted(p.name for p in Path(tmp).iterdir())
        what = "only " + ", ".join(leftovers) if leftovers else "nothing"
        reason = f"nsys at {nsys} wrote no report (exit {code}; {what}): {_tail(text)}"
    known[key] = {"reason": reason, "at": datetime.now(UTC).isoformat(timespec="seconds")}
    _write_json(cache, known)
    return False, reason


def nsys_timeline(
    nsys: str, config: dict[str, Any], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[list[dict[str, Any]] | None, str]:
    """One workload's kernels through `nsys profile` + `nsys stats` (sqlite as the fallback)."""
    with tempfile.TemporaryDirectory(prefix="kw-nsys-") as tmp:
        cfg = Path(tmp) / "worker.json"
        cfg.write_text(json.dumps(config))
        report = Path(tmp) / "timeline"
        program = [sys.executable, "-m", "runner.worker", str(cfg)]
        code, text = _run(profile_command(nsys, report, program), timeout, cwd=cwd, env=env)
        rep = Path(f"{report}.nsys-rep")
        if not rep.is_file():
            return None, f"nsys profile wrote no report (exit {code}): {_tail(text)}"
        code, text = _run(stats_command(nsys, rep), timeout)
        rows = parse_kern_sum(text) if code == 0 else []
        how = "nsys stats --report cuda_gpu_kern_sum"
        if not rows:
            db = Path(tmp) / "timeline.sqlite"
            code, text = _run(export_command(nsys, rep, db), timeout)
            rows = sqlite_kernels(db) if code == 0 and db.is_file() else []
            how = "nsys export --type sqlite"
        if not rows:
            return None, f"nsys found no kernel in the report: {_tail(text)}"
    return from_totals(rows, config["steps"]), how


# --- the runner's side ------------------------------------------------------------------------


def capture(
    suite: Any, records: list[Any], env: dict[str, str], advance: Callable[[str], None],
    log: Callable[[str], None], cache: Path = PROBE_CACHE,
) -> None:  # fmt: skip
    """Fill `record.timeline` of each record (nsys where it reports, CUPTI otherwise)."""
    pending = {r.info["id"]: r for r in records}
    nsys, why = find_nsys(), "Nsight Systems (nsys) not found"
    if nsys is not None:
        ok, why = probe(nsys, cache)
        nsys_env = child_env(suite, env)
        while ok and pending:
            wid, record = next(iter(pending.items()))
            config = _config(suite, wid, "nsys")
            kernels, how = nsys_timeline(
                nsys, config, suite.root, nsys_env, suite.timing.timeout_seconds + 60
            )
            if kernels is None:
                ok, why = False, f"nsys at {nsys}: {how}"
                break
            record.timeline = section("nsys", f"{how} ({nsys}), per step of {STEPS}", kernels)
            advance(pending.pop(wid).info["id"])
    reason = f"{why}; CUPTI kernel activity (cupti-python), per step of {STEPS}"
    for wid, record in list(pending.items()):  # traced by the first timing process already
        first = record.timings[0] if getattr(record, "timings", None) else None
        traced = first.result.get("timeline") if first and first.result else None
        if traced and traced.get("kernels"):
            where = "traced in the first timing process after its samples"
            record.timeline = section("cupti", f"{reason} ({where})", traced["kernels"])
            advance(pending.pop(wid).info["id"])
    if not pending:
        return
    phase = run_phase(suite, "timeline", list(pending), env=env)
    for wid, record in pending.items():
        outcome = phase.outcomes.get(wid)
        if outcome is not None and outcome.status == "ok" and outcome.result:
            record.timeline = section("cupti", reason, outcome.result["kernels"])
        else:
            error = outcome.error if outcome else "no result"
            log(f"timeline of {wid} failed ({why}; CUPTI: {_tail(error)})")
        advance(wid)


def _config(suite: Any, wid: str, tracer: str) -> dict[str, Any]:
    return {
        "root": str(suite.root), "workloads": suite.workloads, "check": suite.check,
        "device": suite.device, "mode": "timeline", "ids": [wid], "seed": 0,
        "tracer": tracer, "steps": STEPS,
    }  # fmt: skip


def child_env(suite: Any, env: dict[str, str]) -> dict[str, str]:
    """The environment of a worker run under a profiler (as runner.measure.phase builds it)."""
    out = {**os.environ, **env}
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(suite.root), out.get("PYTHONPATH")) if p)
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))
    except OSError:
        pass

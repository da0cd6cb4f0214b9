"""A result document of an imported file, for the same ingest as a runner's."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from service.runs.imports import ImportedFile
from service.schemas.document import MAX_SAMPLES_PER_TIMING

SCHEMA_VERSION = 1


def run_id(tool: str, data: bytes, repository: str, commit: str, branch: str) -> str:
    """The same file imported for the same commit twice is the same run (stored once)."""
    digest = hashlib.sha256(b"\0".join(x.encode() for x in (repository, commit, branch)))
    digest.update(data)
    return f"import-{tool}-{digest.hexdigest()[:40]}"


def to_document(
    imported: ImportedFile,
    *,
    run: str,
    repository: str,
    commit: str,
    branch: str,
    committed_at: datetime | None = None,
) -> dict[str, Any]:
    """The raw document (validated by the caller as any other): one workload per series. The
    commit's time is `committed_at`, else when the tool ran, else now."""
    now = datetime.now(UTC)
    started = imported.started_at or now
    when = committed_at or imported.started_at or now
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run,
        "suite": imported.suite,
        "status": "succeeded",
        "repository": {"name": repository},
        "branch": branch,
        "commit": {"sha": commit, "committed_at": when.isoformat()},
        "started_at": started.isoformat(),
        "finished_at": started.isoformat(),  # the files say when a run began, not how long
        "environment": imported.environment,
        "build": {"status": "ok"},
        "workloads": [_workload(s) for s in imported.series],
        "log_tail": f"imported from {imported.tool} output ({len(imported.series)} series)",
    }


def thinned(samples: list[float], limit: int = MAX_SAMPLES_PER_TIMING) -> list[float]:
    """At most `limit` samples, evenly spaced over the run (nvbench records ~10^5-10^6 cold
    samples of a short kernel; a document holds at most MAX_SAMPLES_PER_TIMING)."""
    if len(samples) <= limit:
        return samples
    step = len(samples) / limit
    return [samples[int(i * step)] for i in range(limit)]


def _workload(series: Any) -> dict[str, Any]:
    kernel = series.kernel or series.name
    out: dict[str, Any] = {
        "name": series.name,
        "params": series.params,
        "kernels": [kernel],
        "status": series.status,
        "error": series.error,
    }
    if series.status == "ok":
        out["timing"] = {
            "kernel": kernel,
            "unit": series.unit,
            "method": series.method,
            "stop_reason": _note(series.note, len(series.samples))[:1000],
            "processes": [{"samples": thinned(series.samples)}],
        }
    return out


def _note(note: str, count: int) -> str:
    if count <= MAX_SAMPLES_PER_TIMING:
        return note
    return f"{note}; every {count / MAX_SAMPLES_PER_TIMING:.2f}th of {count} samples kept"

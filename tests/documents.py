"""Build result documents for tests: realistic shape, chosen medians."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "result-document.example.json"
BASE_TIME = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def example_document() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def sha_for(label: str) -> str:
    return hashlib.sha1(label.encode()).hexdigest()


def timing(
    kernel: str,
    median_us: float,
    *,
    n: int = 20,
    processes: int = 3,
    spread: float = 0.002,
    seed: int = 0,
) -> dict[str, Any]:
    """Samples around `median_us` with a relative spread typical of a >= 50 us kernel."""
    rng = np.random.default_rng(seed)
    procs = []
    for _ in range(processes):
        samples = median_us * (1 + spread * rng.standard_normal(n))
        procs.append({"samples": [float(x) for x in samples], "sm_clock_mhz": 1980.0})
    return {
        "kernel": kernel,
        "unit": "us",
        "method": "cuda_events",
        "l2_flushed": True,
        "processes": procs,
    }


def document(
    *,
    commit: str,
    parents: list[str] | None = None,
    ancestors: list[str] | None = None,
    minutes: int = 0,
    branch: str = "main",
    repository: str = "acme/kernels",
    fingerprint: str = "00000000000000aa",
    medians: dict[str, float] | None = None,
    run_id: str | None = None,
    seed: int = 0,
    spread: float = 0.002,
) -> dict[str, Any]:
    """A run at `commit` (a label or sha) with one gemm_fwd workload per entry of `medians`."""
    doc = copy.deepcopy(example_document())
    sha = commit if len(commit) == 40 else sha_for(commit)
    doc["run_id"] = run_id or str(uuid.uuid4())
    doc["job_id"] = None
    doc["repository"] = {"name": repository, "url": f"https://example.com/{repository}.git"}
    doc["branch"] = branch
    doc["commit"]["sha"] = sha
    doc["commit"]["parents"] = [p if len(p) == 40 else sha_for(p) for p in (parents or [])]
    doc["commit"]["ancestors"] = [a if len(a) == 40 else sha_for(a) for a in (ancestors or [])]
    doc["commit"]["committed_at"] = (BASE_TIME + timedelta(minutes=minutes)).isoformat()
    doc["commit"]["message"] = f"commit {commit}\n\nbody"
    doc["environment"]["fingerprint"] = fingerprint
    workloads = []
    for i, (kernel, median) in enumerate((medians or {"gemm_bias_act_f32": 100.0}).items()):
        workloads.append(
            {
                "name": "gemm_fwd",
                "params": {"m": 1024, "n": 1024, "k": 1024, "act": kernel},
                "kernels": [kernel],
                "status": "ok",
                "correctness": {
                    "passed": True,
                    "error_norm": 1e-7,
                    "tolerance": 1e-5,
                    "precision": "fp32",
                },
                "flops": 2.1e9,
                "bytes": 1.2e7,
                "timing": timing(kernel, median, seed=seed * 100 + i, spread=spread),
            }
        )
    doc["workloads"] = workloads
    return doc


def post_history(client: Any, runs: int, medians: dict[str, float], **kw: Any) -> list[str]:
    """Post `runs` commits c0, c1, ... on a first-parent line, each measured with `medians`."""
    labels: list[str] = []
    for i in range(runs):
        label = f"c{i}"
        doc = document(
            commit=label,
            parents=labels[-1:],
            ancestors=labels[::-1],
            minutes=i,
            medians=medians,
            seed=i,
            **kw,
        )
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        labels.append(label)
    return labels

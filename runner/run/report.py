"""Assemble the result document (the runner → service contract) from what the stages saw."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from runner.measure.phase import Outcome
from runner.suite.build import BuildOutcome
from runner.suite.checkout import CommitInfo

SCHEMA_VERSION = 1
# What a check worker returns beside the correctness: the launch's signature (for ncu's reuse)
# what the compiler made of its kernels (the document's `compiled`), and whether its reference
# was computed or kept (runner.worker.references: the runner's log).
NOT_CORRECTNESS = ("signature", "compiled", "reference")


@dataclass
class WorkloadRecord:
    """Everything the stages learned about one workload."""

    info: dict[str, Any]
    check: Outcome | None = None
    timings: list[Outcome] = field(default_factory=list)
    timeline: dict[str, Any] | None = None
    ncu: dict[str, Any] | None = None

    @property
    def signature(self) -> dict[str, Any] | None:
        """What its passing check on a GPU recorded of the launch ncu profiles
        (runner.worker.launch_record; {"unavailable": why} where it could not)."""
        result = self.check.result if self.check is not None else None
        return (result or {}).get("signature")

    @property
    def passed(self) -> bool:
        return (
            self.check is not None
            and self.check.status == "ok"
            and bool(self.check.result and self.check.result["passed"])
        )


def of_process(outcome: Outcome, kind: str) -> Outcome:
    """`outcome`, saying the kind of process that timed it (the document's `process`: suite,
    short, paired or alone): a prepare time compares only with one of its kind."""
    if outcome.result:
        outcome.result = {**outcome.result, "process": kind}
    return outcome


def timing_section(info: dict[str, Any], timings: list[Outcome]) -> dict[str, Any] | None:
    processes = [t.result for t in timings if t.status == "ok" and t.result]
    if not processes:
        return None
    first = processes[0]
    return {
        "kernel": (info["kernels"] or [info["name"]])[0]
        if len(info["kernels"]) <= 1
        else info["name"],
        "metric": "duration",
        "unit": "us",
        "method": first["method"],
        "l2_flushed": bool(first["l2_flushed"]),
        "stop_reason": "; ".join(sorted({p["stop_reason"] for p in processes}))[:1000],
        "processes": [
            {
                "samples": p["samples"],
                "sm_clock_mhz": p.get("sm_clock_mhz"),
                "throttle_reasons": p.get("throttle_reasons", []),
                **{k: p[k] for k in ("prepare_seconds", "peak_memory_bytes", "process") if k in p},
            }
            for p in processes
        ],
    }


def choices_section(timings: list[Outcome]) -> dict[str, str]:
    """What the workload chose in its timing processes' `prepare`: per name, the choice, or the
    distinct choices, sorted, joined by " | " where processes chose differently (an autotuner
    that timed its configs anew in each): sorted, so that two runs that chose the same set
    compare equal whichever process chose first."""
    seen: dict[str, list[str]] = {}
    for t in timings:
        for name, choice in ((t.result or {}).get("choices") or {}).items():
            if choice not in seen.setdefault(name, []):
                seen[name].append(choice)
    return {name: " | ".join(sorted(values))[:1000] for name, values in seen.items()}


def reference_note(outcomes: dict[str, Outcome]) -> str:
    """Which workloads' references were kept from an earlier run and which were computed (and
    why not kept), for the runner's log (runner.worker.references)."""
    said = {wid: o.result["reference"] for wid, o in outcomes.items()
            if o.status == "ok" and o.result and o.result.get("reference")}  # fmt: skip
    if not said:
        return ""
    kept = sorted(w for w, r in said.items() if r.startswith("kept"))
    computed = [f"{w} {r}" for w, r in sorted(said.items()) if not r.startswith("kept")]
    parts = [f"references kept for {len(kept)} of {len(said)}"]
    return "; ".join([*parts, f"computed: {', '.join(computed)}"] if computed else parts)


def summary(section: dict[str, Any]) -> dict[str, float]:
    samples = np.concatenate([p["samples"] for p in section["processes"]])
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return {
        "n": int(samples.size),
        "median": float(median),
        "q1": float(q1),
        "q3": float(q3),
        "min": float(samples.min()),
        "max": float(samples.max()),
        "mean": float(samples.mean()),
    }


def workload_section(record: WorkloadRecord) -> dict[str, Any]:
    info = record.info
    out: dict[str, Any] = {
        "name": info["name"],
        "params": info["params"],
        "kernels": info["kernels"],
        "flops": info.get("flops"),
        "bytes": info.get("bytes"),
        "error": "",
        "correctness": None,
        "timing": None,
        "timeline": record.timeline,
        "ncu": record.ncu,
    }
    check = record.check
    if check is None:
        out["status"] = "skipped"
    elif check.status != "ok":
        out["status"] = {"timeout": "timeout", "crashed": "crashed"}.get(check.status, "failed")
        out["error"] = check.error[-8000:]
    else:
        result = check.result
        out["correctness"] = {k: v for k, v in result.items() if k not in NOT_CORRECTNESS} \
            if result else result  # fmt: skip
        if result and result.get("compiled"):
            out["compiled"] = result["compiled"]
        out["status"] = "ok" if record.passed else "correctness_failed"
        if not record.passed:
            error = check.result.get("error_norm") if check.result else None
            out["error"] = (
                "output not finite (NaN or infinity)"
                if error is None
                else f"relative L2 error {error:.3g} above {check.result['tolerance']:g}"
            )
    if out["status"] == "ok":
        failed = [t for t in record.timings if t.status != "ok"]
        if failed and len(failed) == len(record.timings):
            out["status"] = {"timeout": "timeout", "crashed": "crashed"}.get(
                failed[0].status, "failed"
            )
            out["error"] = failed[0].error[-8000:]
        else:
            out["timing"] = timing_section(info, record.timings)
            out["choices"] = choices_section(record.timings)
            if out["timing"] is not None:
                out["timing"].update(summary(out["timing"]))
    for key in ("flops", "bytes"):
        if out[key] is not None and not math.isfinite(out[key]):
            out[key] = None
    return out


def document(
    *,
    run_id: str,
    suite: str,
    repository: dict[str, Any],
    branch: str,
    commit: CommitInfo,
    runner: dict[str, Any] | None,
    environment: dict[str, Any],
    build: BuildOutcome,
    records: list[WorkloadRecord],
    started_at: datetime,
    job_id: int | None = None,
    lease_token: str | None = None,
    log_tail: str = "",
    work_changes: str = "notice",
) -> dict[str, Any]:
    workloads = [workload_section(r) for r in records]
    if build.status != "ok":
        status = "build_failed"
    elif any(w["status"] not in ("ok", "skipped") for w in workloads):
        status = "failed"
    else:
        status = "succeeded"
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "job_id": job_id,
        "lease_token": lease_token,
        "suite": suite,
        "status": status,
        "repository": repository,
        "branch": branch,
        "commit": commit.to_document(),
        "runner": runner,
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "environment": environment,
        "build": build.to_document(),
        "workloads": workloads,
        "log_tail": log_tail[-20_000:],
        "work_changes": work_changes,
    }

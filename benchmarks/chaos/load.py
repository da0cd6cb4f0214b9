"""The load: agents and two service processes on one database, then concurrent readers."""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.chaos.processes import (
    EXAMPLE,
    REPOSITORY,
    Process,
    Service,
    enqueue,
    runner_token,
    scratch_database,
    wait_until,
)
from benchmarks.chaos.survey import (
    Report,
    backlog_empty,
    judge_jobs,
    judge_runs,
    spool_state,
    survey,
)

READ_P95_MS = 500.0


def stub_agent_main(argv: list[str]) -> int:
    """The runner's real agent loop, with the measurement replaced by a recorded document."""
    from runner.agent.loop import run_agent

    p = argparse.ArgumentParser(prog="benchmarks.chaos stub-agent")
    p.add_argument("--server", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--spool", type=Path, required=True)
    p.add_argument("--chain", type=Path, required=True, help="JSON: sha -> first-parent ancestors")
    args = p.parse_args(argv)
    chain = json.loads(args.chain.read_text())
    template = json.loads(EXAMPLE.read_text())
    rng = np.random.default_rng(os.getpid())

    def run_job(claim: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        job = claim["job"]
        doc = copy.deepcopy(template)
        now = datetime.now(UTC).isoformat()
        doc.update(
            run_id=str(uuid.uuid4()),
            job_id=job["id"],
            lease_token=claim["attempt_token"],
            runner=None,
            repository={"name": job["repository"], "url": None},
            branch=job["branch"],
            started_at=now,
            finished_at=now,
        )
        ancestors = chain[job["commit"]]
        doc["commit"].update(sha=job["commit"], parents=ancestors[:1], ancestors=ancestors)
        for w in doc["workloads"]:  # a little noise, as a real measurement has
            timing = w.get("timing") or {}
            for summary in ("n", "median", "q1", "q3", "min", "max", "mean"):
                timing.pop(summary, None)  # the service recomputes them from the samples
            for proc in timing.get("processes", []):
                factor = float(1 + 0.002 * rng.standard_normal())
                proc["samples"] = [s * factor for s in proc["samples"]]
        return doc

    return run_agent(
        args.server,
        args.token,
        run_job,
        spool_dir=args.spool,
        environment={"stub": True},
        poll_interval=0.2,
        lease_interval=5.0,
    )


@dataclass
class Latencies:
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)


def read_paths(shas: list[str], rng: random.Random) -> tuple[str, str]:
    i = rng.randrange(1, len(shas))
    sha, base = shas[i], shas[i - 1]
    kinds = {
        "/": "/",
        "/commits/{sha}": f"/commits/{sha}",
        "/trends": f"/trends?repository={REPOSITORY}&branch=main",
        "/compare": f"/compare?base={base}&head={sha}",
        "/alerts": "/alerts",
        "GET /api/v1/commits/{sha}/metrics": f"/api/v1/commits/{sha}/metrics",
    }
    kind = rng.choice(list(kinds))
    return kind, kinds[kind]


def readers(urls: list[str], shas: list[str], clients: int, seconds: float) -> Latencies:
    # Untimed first: every kind of page once per process (templates, imports, caches).
    rng = random.Random(0)
    kinds = {kind: path for kind, path in (read_paths(shas, rng) for _ in range(200))}
    for url in urls:
        for path in kinds.values():
            httpx.get(f"{url}{path}", timeout=60)
    out = Latencies()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def read(n: int) -> None:
        rng = random.Random(n)
        with httpx.Client(base_url=urls[n % len(urls)], timeout=60) as client:
            while time.monotonic() < stop_at:
                kind, path = read_paths(shas, rng)
                t0 = time.perf_counter()
                try:
                    answer = client.get(path)
                    status = answer.status_code
                except httpx.TransportError as exc:
                    status = type(exc).__name__
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    if status == 200:
                        out.by_kind.setdefault(kind, []).append(ms)
                    else:
                        out.errors[f"{kind} {status}"] += 1

    threads = [threading.Thread(target=read, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def load(
    kind: str,
    jobs_n: int,
    agents_n: int,
    clients: int,
    seconds: float,
    postgres_url: str | None,
    workdir: Path,
) -> Report:
    from tests.documents import sha_for

    report = Report(
        f"load: {agents_n} agents, 2 service processes, {jobs_n} jobs, {clients} readers ({kind})"
    )
    shas = [sha_for(f"load-{i}") for i in range(jobs_n)]
    chain = {sha: shas[max(0, i - 50) : i][::-1] for i, sha in enumerate(shas)}
    (workdir / "chain.json").write_text(json.dumps(chain))
    spools = [workdir / f"stub-{i}-spool" for i in range(agents_n)]
    with scratch_database(kind, postgres_url, workdir) as db_url:
        services = [Service(db_url, workdir, f"service-{i}").start() for i in range(2)]
        env = services[0].env
        tokens = [runner_token(env, f"load-agent-{i}") for i in range(agents_n)]
        enqueue(services[0].url, shas, "https://example.com/acme/chaos.git")
        stubs = [
            Process(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.chaos",
                    "stub-agent",
                    "--server",
                    services[i % 2].url,
                    "--token",
                    tokens[i],
                    "--spool",
                    str(spools[i]),
                    "--chain",
                    str(workdir / "chain.json"),
                ],
                env,
                workdir / f"stub-{i}.log",
            )
            for i in range(agents_n)
        ]
        t0 = time.monotonic()
        for stub in stubs:
            stub.start()
        try:

            def all_done() -> bool:
                states = Counter(
                    j["state"]
                    for j in httpx.get(
                        f"{services[1].url}/api/v1/jobs", params={"limit": 1000}, timeout=30
                    ).json()
                )
                if states["failed"]:
                    raise RuntimeError(f"jobs failed: {dict(states)}; see {workdir}/stub-*.log")
                return states["succeeded"] == jobs_n

            wait_until("every job to succeed", all_done, timeout=60 + jobs_n, every=0.5)
            stored_s = time.monotonic() - t0
            wait_until("the analysis backlog", lambda: backlog_empty(db_url), 600, every=0.5)
            analysed_s = time.monotonic() - t0
            for stub in stubs:
                stub.stop()
            after = readers([s.url for s in services], shas, clients, seconds)
        finally:
            for stub in stubs:
                stub.stop()
            for service in services:
                service.stop()
        found = survey(db_url)
    claims = sum(found.attempts[a] * a for a in found.attempts)
    report.add(
        "jobs claimed exactly once",
        jobs_n,
        f"{found.attempts.get(1, 0)} claimed once, {claims} claims in all",
        found.attempts == Counter({1: jobs_n}),
    )
    judge_jobs(report, found, jobs_n)
    shape = found.shapes.most_common(1)[0][0] if found.shapes else None
    judge_runs(report, found, shape)
    waiting, rejected, dropped = spool_state(spools)
    report.add(
        "agents' spools at the end",
        "",
        f"{waiting} waiting, {rejected} rejected, {dropped} dropped",
        not waiting + rejected + dropped,
    )
    report.add(
        "throughput",
        f"{jobs_n} jobs",
        f"stored in {stored_s:.1f} s ({jobs_n / stored_s:.1f} jobs/s), "
        f"analysed by {analysed_s:.1f} s",
        found.unanalysed == 0,
    )
    every: list[float] = []
    for name, values in sorted(after.by_kind.items()):
        p50, p95 = np.percentile(values, [50, 95])
        every += values
        report.add(
            f"`{name}` p50 / p95 / max",
            f"{len(values)} requests",
            f"{p50:.0f} / {p95:.0f} / {max(values):.0f} ms",
            p95 <= READ_P95_MS,
        )
    if every:
        p95 = float(np.percentile(every, 95))
        report.add(
            f"all reads, {clients} clients, {seconds:g} s",
            f"{len(every)} requests ({len(every) / seconds:.0f}/s)",
            f"p95 {p95:.0f} ms, {sum(after.errors.values())} errors",
            p95 <= READ_P95_MS and not after.errors,
        )
    if after.errors:
        report.notes.append(f"read errors: {dict(after.errors)}")
    return report

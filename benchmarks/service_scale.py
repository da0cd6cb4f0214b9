"""Scale benchmark: a database of N realistic results, then the read API and ingest over HTTP.

    python -m benchmarks.service_scale [--database sqlite|postgres|both] [--rows 1000000]
        [--series 200] [--samples 30] [--requests 200] [--documents 200] [--keep]

For each database: migrate, bulk-fill (commits = rows / series, one run per commit, one result
per series per run, with raw samples), start `kernelwatch serve` as its own process, and measure
from this process with httpx: GET /api/v1/commits/{sha}/metrics, GET /api/v1/series (1,000
points) and POST /api/v1/runs of whole result documents, sequentially and from 4 threads. The
service answers a POST once the document is stored and analyses it a moment later (verdicts,
alerts, change points: service.evaluation.backlog); the last column says how fast documents were
stored and analysed both, from the first post until the last one's analysis was done.
Prints a Markdown table with PASS/FAIL against the targets of issue 2 item 8; exits 1 on a FAIL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.scale_fill import (
    FAMILIES,
    REPOSITORY,
    commit_sha,
    fill,
    result_documents,
    series_specs,
)
from service.core.db import create_db_engine
from service.core.migrate import upgrade
from service.core.settings import Settings

COMMIT_P95_MS, SERIES_P95_MS, INGEST_DOCS_S, PAGE_P95_MS = 50.0, 100.0, 50.0, 300.0
SERIES_POINTS, DOC_WORKLOADS, CLIENTS = 1000, 30, 4
WORKERS = 2  # one server process per core of the 2-core target machine
TOKEN = "bench-admin-token"
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Outcome:
    database: str
    results: int
    rows: int
    fill_s: float
    commit_ms: tuple[float, float, float]
    series_ms: tuple[float, float, float]
    ingest_seq: float
    ingest_conc: float
    analysed_seq: float  # documents per second from the first post until all were analysed
    analysed_conc: float
    pages: dict[str, tuple[float, ...]]  # page -> p50, p95, max ms

    def pages_ok(self) -> bool:
        return all(ms[1] <= PAGE_P95_MS for ms in self.pages.values())

    def verdicts(self) -> dict[str, bool]:
        return {
            "commit": self.commit_ms[1] <= COMMIT_P95_MS,
            "series": self.series_ms[1] <= SERIES_P95_MS,
            "ingest_seq": self.ingest_seq >= INGEST_DOCS_S,
            "ingest_conc": self.ingest_conc >= INGEST_DOCS_S,
        }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="service_scale", description=__doc__.split("\n")[0])
    p.add_argument("--database", choices=["sqlite", "postgres", "both"], default="both")
    p.add_argument("--rows", type=int, default=1_000_000, help="results to load")
    p.add_argument("--series", type=int, default=200, help="series; commits = rows / series")
    p.add_argument("--samples", type=int, default=30, help="raw samples per result (3 processes)")
    p.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "KERNELWATCH_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="server to create a scratch database kw_bench_<random> on",
    )
    p.add_argument("--requests", type=int, default=200, help="timed requests per read measurement")
    p.add_argument("--documents", type=int, default=200, help="documents per ingest measurement")
    p.add_argument("--keep", action="store_true", help="keep the database (its URL is printed)")
    p.add_argument("--reuse", metavar="URL", help="measure a database kept by --keep; no fill")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


@contextlib.contextmanager
def scratch_database(kind: str, args: argparse.Namespace, workdir: Path) -> Iterator[str]:
    """The URL of an empty database: a SQLite file in workdir or a new PostgreSQL database."""
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'kernelwatch.db'}"
        return
    admin_url = Settings(database_url=args.postgres_url).database_url
    assert admin_url is not None
    name = f"kw_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        if not args.keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(url: str, workdir: Path) -> Iterator[str]:
    """`kernelwatch serve` in its own process on a free port; yields its base URL."""
    port = _free_port()
    exe = Path(sys.executable).with_name("kernelwatch")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "service.cli"]
    env = os.environ | {
        "KERNELWATCH_DATABASE_URL": url,
        "KERNELWATCH_DATA_DIR": str(workdir),
        "KERNELWATCH_ADMIN_TOKEN": TOKEN,
    }
    log_path = workdir / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*cmd, "serve", "--port", str(port), "--workers", str(WORKERS)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"kernelwatch serve did not come up:\n{tail}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def timed_gets(client: httpx.Client, paths: list[str], warmup: int) -> tuple[float, ...]:
    """p50, p95 and max latency in ms of GET paths (after `warmup` untimed ones)."""
    for path in paths[:warmup]:
        client.get(path).raise_for_status()
    latencies = []
    for path in paths[warmup:]:
        t0 = time.perf_counter()
        response = client.get(path)
        latencies.append((time.perf_counter() - t0) * 1000)
        response.raise_for_status()
    p50, p95 = np.percentile(latencies, [50, 95])
    return float(p50), float(p95), float(max(latencies))


def ingest_rate(base: str, docs: list[bytes], clients: int) -> float:
    """Documents per second stored by POST /api/v1/runs from `clients` threads."""
    local = threading.local()
    made: list[httpx.Client] = []
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def post(body: bytes) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, headers=headers, timeout=120)
            made.append(local.client)
        response = local.client.post("/api/v1/runs", content=body)
        if response.status_code != 201:
            raise RuntimeError(f"POST /api/v1/runs: {response.status_code} {response.text[:500]}")

    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(post, docs))
    finally:
        for c in made:
            c.close()
    return len(docs) / (time.perf_counter() - t0)


def page_paths(rng: np.random.Generator, commits: int, n: int) -> dict[str, list[str]]:
    """n requests per dashboard page (issue 7: each renders in <= 300 ms at this scale)."""
    heads = rng.integers(1, commits, n)
    workloads = rng.choice(sorted({f[0] for f in FAMILIES}), n)
    return {
        "/": ["/"] * n,
        "/trends?workload=W": [
            f"/trends?repository={REPOSITORY}&branch=main&workload={w}" for w in workloads
        ],
        "/commits/{sha}": [f"/commits/{commit_sha(int(i))}" for i in heads],
        "/compare?base=&head=": [
            f"/compare?base={commit_sha(int(i) - 1)}&head={commit_sha(int(i))}" for i in heads
        ],
        "/alerts": ["/alerts?state=fixed&state=open"] * n,
    }


def analysed_rate(base: str, docs: list[bytes], clients: int) -> tuple[float, float]:
    """Documents per second stored, and stored and analysed (verdicts, alerts, change points).

    The service analyses after answering (service.evaluation.backlog); runs are analysed in the
    order they were stored, so the last document's commit says when the whole batch was done.
    """
    t0 = time.perf_counter()
    stored = ingest_rate(base, docs, clients)
    last = json.loads(docs[-1])["commit"]["sha"]
    with httpx.Client(base_url=base, timeout=120) as client:
        while True:
            body = client.get(f"/api/v1/commits/{last}/metrics").raise_for_status().json()
            if not (body["analysis_pending"] or body["change_points_pending"]):
                break
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("the analysis backlog was not worked off in 600 s")
            time.sleep(0.05)
    return stored, len(docs) / (time.perf_counter() - t0)


def run_one(kind: str, args: argparse.Namespace) -> Outcome:
    commits = max(1, args.rows // args.series)
    rng = np.random.default_rng(args.seed)
    workdir = Path(tempfile.mkdtemp(prefix=f"kw_bench_{kind}_"))
    if args.reuse:
        engine = create_db_engine(Settings(database_url=args.reuse).effective_database_url)
        with engine.connect() as conn:
            stored = conn.execute(text("SELECT count(*) FROM commits")).scalar_one()
        engine.dispose()
        print(f"[{kind}] reusing {args.reuse}: {stored:,} commits", flush=True)
        try:
            return measure(kind, args, args.reuse, workdir, commits, 0, 0.0, rng, first=stored)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        with scratch_database(kind, args, workdir) as url:
            print(f"[{kind}] {make_url(url).render_as_string(hide_password=True)}", flush=True)
            engine = create_db_engine(Settings(database_url=url).effective_database_url)
            try:
                upgrade(engine)
                print(f"[{kind}] filling {commits:,} commits x {args.series} series", flush=True)
                t0 = time.perf_counter()
                rows = fill(
                    engine, commits=commits, series=args.series, samples=args.samples,
                    seed=args.seed, log=lambda m: print(f"[{kind}]{m}", flush=True),
                )  # fmt: skip
                fill_s = time.perf_counter() - t0
            finally:
                engine.dispose()
            print(f"[{kind}] fill: {rows:,} rows in {fill_s:.1f} s ({rows / fill_s:,.0f} rows/s)")
            outcome = measure(kind, args, url, workdir, commits, rows, fill_s, rng)
            if args.keep:
                print(f"[{kind}] kept: {url}")
            return outcome
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def measure(
    kind: str,
    args: argparse.Namespace,
    url: str,
    workdir: Path,
    commits: int,
    rows: int,
    fill_s: float,
    rng: np.random.Generator,
    first: int | None = None,
) -> Outcome:
    warm, n = max(5, args.requests // 10), args.requests
    # Half of the commits asked for are among the newest (full history behind them), half anywhere.
    newest = rng.integers(max(0, commits - 100), commits, (warm + n) // 2)
    anywhere = rng.integers(0, commits, warm + n - len(newest))
    picks = rng.permutation(np.concatenate([newest, anywhere]))
    commit_paths = [f"/api/v1/commits/{commit_sha(int(i))}/metrics" for i in picks]
    series_ids = rng.integers(1, args.series + 1, warm + n)
    series_paths = [f"/api/v1/series?id={s}&branch=main&limit={SERIES_POINTS}" for s in series_ids]
    specs = series_specs(args.series)
    docs = result_documents(
        2 * args.documents, specs=specs, first=first or commits, workloads=DOC_WORKLOADS,
        samples=args.samples, seed=args.seed,
    )  # fmt: skip
    with serve(url, workdir) as base, httpx.Client(base_url=base, timeout=120) as client:
        settle(kind, url)
        one = client.get(commit_paths[-1]).json()
        assert len(one["workloads"]) == args.series, "commit metrics answered the wrong workloads"
        points = len(client.get(series_paths[-1]).json()["points"])
        assert points == min(SERIES_POINTS, commits), f"series answered {points} points"
        commit_ms = timed_gets(client, commit_paths, warm)
        print(f"[{kind}] commit metrics ({args.series} workloads): " + _ms(commit_ms), flush=True)
        series_ms = timed_gets(client, series_paths, warm)
        print(f"[{kind}] series ({points} points): " + _ms(series_ms), flush=True)
        pages = {}
        for page, paths in page_paths(rng, commits, max(10, n // 4) + 3).items():
            pages[page] = timed_gets(client, paths, 3)
            print(f"[{kind}] page {page}: " + _ms(pages[page]), flush=True)
        seq, seq_done = analysed_rate(base, docs[: args.documents], 1)
        conc, conc_done = analysed_rate(base, docs[args.documents :], CLIENTS)
        print(f"[{kind}] ingest ({DOC_WORKLOADS} workloads/document): {seq:.1f} docs/s "
              f"sequential, {conc:.1f} docs/s from {CLIENTS} clients; stored and analysed: "
              f"{seq_done:.1f} and {conc_done:.1f} docs/s", flush=True)  # fmt: skip
    return Outcome(
        kind, commits * args.series, rows, fill_s, commit_ms, series_ms, seq, conc, seq_done,
        conc_done, pages,
    )  # fmt: skip


def settle(kind: str, url: str, limit_s: float = 900) -> None:
    """Wait until the server has analysed every stored run: a backlog left by an earlier,
    interrupted measurement would otherwise be worked off during this one's timings."""
    engine = create_db_engine(Settings(database_url=url).effective_database_url)
    query = text("SELECT count(*) FROM runs WHERE analysed_at IS NULL OR change_points_at IS NULL")
    started = time.perf_counter()
    try:
        with engine.connect() as conn:
            waiting = first = conn.execute(query).scalar_one()
            while waiting:
                if time.perf_counter() - started > limit_s:
                    raise RuntimeError(f"{waiting} stored runs still unanalysed after {limit_s} s")
                time.sleep(0.5)
                conn.rollback()
                waiting = conn.execute(query).scalar_one()
    finally:
        engine.dispose()
    if first:
        print(f"[{kind}] the server analysed {first} runs left from an earlier run first "
              f"({time.perf_counter() - started:.1f} s)", flush=True)  # fmt: skip


def _ms(v: tuple[float, ...]) -> str:
    return f"p50 {v[0]:.1f} ms, p95 {v[1]:.1f} ms, max {v[2]:.1f} ms"


def table(outcomes: list[Outcome]) -> str:
    def mark(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    lines = [
        "| database | results | rows (all tables) | fill s | commit metrics p50 / p95 ms "
        f"(≤ {COMMIT_P95_MS:.0f}) | series {SERIES_POINTS} pts p50 / p95 ms "
        f"(≤ {SERIES_P95_MS:.0f}) | ingest docs/s sequential (≥ {INGEST_DOCS_S:.0f}) "
        f"| ingest docs/s {CLIENTS} clients (≥ {INGEST_DOCS_S:.0f}) "
        f"| stored and analysed docs/s, sequential / {CLIENTS} clients |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for o in outcomes:
        v = o.verdicts()
        filled = f"{o.rows:,} | {o.fill_s:.1f}" if o.rows else "(reused) | (reused)"
        lines.append(
            f"| {o.database} | {o.results:,} | {filled} "
            f"| {o.commit_ms[0]:.1f} / {o.commit_ms[1]:.1f} {mark(v['commit'])} "
            f"| {o.series_ms[0]:.1f} / {o.series_ms[1]:.1f} {mark(v['series'])} "
            f"| {o.ingest_seq:.1f} {mark(v['ingest_seq'])} "
            f"| {o.ingest_conc:.1f} {mark(v['ingest_conc'])} "
            f"| {o.analysed_seq:.1f} / {o.analysed_conc:.1f} |"
        )
    pages = sorted({page for o in outcomes for page in o.pages})
    lines += [
        "",
        "| database | " + " | ".join(f"`{p}` p50 / p95 ms" for p in pages) + " |",
        "|---|" + "--:|" * len(pages),
    ]
    for o in outcomes:
        cells = [
            f"{o.pages[p][0]:.1f} / {o.pages[p][1]:.1f} " + mark(o.pages[p][1] <= PAGE_P95_MS)
            for p in pages
        ]
        lines.append(f"| {o.database} | " + " | ".join(cells) + " |")
    lines.append(f"(pages: p95 <= {PAGE_P95_MS:.0f} ms, issue 7)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = ["sqlite", "postgres"] if args.database == "both" else [args.database]
    if args.reuse:
        kinds = ["sqlite" if args.reuse.startswith("sqlite") else "postgres"]
    outcomes = [run_one(kind, args) for kind in kinds]
    print(f"\nkernelwatch service scale, {os.cpu_count()} CPUs, {args.samples} samples per result")
    print(table(outcomes), flush=True)
    return 0 if all(all(o.verdicts().values()) and o.pages_ok() for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

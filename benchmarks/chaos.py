"""Chaos and load: kill -9 the agent mid-job and the service mid-ingest; then 8 agents, 2 service
processes and 20 readers on one database with 500 jobs. Prints what was tried and what survived.

    python -m benchmarks.chaos [--database sqlite|postgres] [--agent-kills 20] [--service-kills 20]
        [--load-jobs 500] [--load-agents 8] [--readers 20] [--read-seconds 15]
        [--only crash|load] [--postgres-url URL]

Agent kills: `kernelwatch-runner agent` works jobs of the CPU fixture suite (tests/runner/cpu_suite)
and is sent SIGKILL at three points in turn: just after its claim, while it measures, and once
its result document is in the spool (posted or not); it is restarted at once on the same spool.
Service kills: `kernelwatch serve` is sent SIGKILL while a POST /api/v1/runs of a whole result
document (120 workloads with ncu metrics) is in flight, with an agent at work beside it, and is
restarted on the same port; the poster resends the same document until it is answered. Then each
job must have succeeded exactly once, each run be stored once and whole, every spooled result
have arrived (or been dropped because its lease was gone and the job measured again), and the
analysis backlog be worked off.

Load: two `kernelwatch serve` processes on one database, 8 agent processes (the runner's real
agent: claim, lease, spool, post; the measurement replaced by a copy of a recorded document) and
500 jobs; each must be claimed exactly once and stored. Then 20 concurrent readers fetch the
pages and the commit-metrics API from both processes; their p95 must stay within 500 ms.
Exits 1 when something did not survive or a target was missed.

`python -m benchmarks.chaos stub-agent ...` is the load's agent process (internal).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ADMIN = "chaos-admin-token"
REPOSITORY = "acme/chaos"
EXAMPLE = ROOT / "docs" / "result-document.example.json"
READ_P95_MS = 500.0
# Short leases, so that the job of a killed agent comes back within seconds.
SERVICE_ENV = {
    "KERNELWATCH_ADMIN_TOKEN": ADMIN,
    "KERNELWATCH_LEASE_SECONDS": "6",
    "KERNELWATCH_REAPER_INTERVAL_SECONDS": "0.5",
    "KERNELWATCH_MAX_ATTEMPTS": "50",
    "KERNELWATCH_ANALYSIS_DELAY_SECONDS": "0.2",
    "KERNELWATCH_ANALYSIS_POLL_SECONDS": "1",
    "KERNELWATCH_LOG_LEVEL": "WARNING",
}


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def wait_until(what: str, ready: Callable[[], bool], timeout: float, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- databases and processes ---------------------------------------------------------------------


@contextlib.contextmanager
def scratch_database(kind: str, postgres_url: str | None, workdir: Path) -> Iterator[str]:
    """An empty, migrated database: a SQLite file in workdir or a new PostgreSQL database."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from service.core.db import create_db_engine
    from service.core.migrate import upgrade
    from service.core.settings import Settings

    if kind == "sqlite":
        url = f"sqlite:///{workdir / 'kernelwatch.db'}"
        engine = create_db_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
        return
    admin_url = Settings(database_url=postgres_url).database_url
    if admin_url is None:
        raise SystemExit(
            "--database postgres needs --postgres-url or KERNELWATCH_TEST_POSTGRES_URL"
        )
    name = f"kw_chaos_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        engine = create_db_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def clean_env(db_url: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWATCH_")}
    return (
        env
        | SERVICE_ENV
        | {
            "KERNELWATCH_DATABASE_URL": db_url,
            "KERNELWATCH_DATA_DIR": str(workdir / "data"),
        }
    )


class Process:
    """A child process in its own session, logging to a file; killable, restartable."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.command, self.env, self.log_path = command, env, log_path
        self.proc: subprocess.Popen | None = None
        self.groups: list[int] = []

    def start(self) -> Process:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.groups.append(self.proc.pid)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL to the process alone, as the OOM killer or a crash would end it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM and wait; then SIGKILL whatever is left of every session it started."""
        code = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait()
        elif self.proc is not None:
            code = self.proc.returncode
        for group in self.groups:  # orphans of killed runs, e.g. timing worker processes
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        return code

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


class Service(Process):
    def __init__(self, db_url: str, workdir: Path, name: str = "service") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [str(BIN / "kernelwatch"), "serve", "--port", str(self.port)]
        super().__init__(command, clean_env(db_url, workdir), workdir / f"{name}.log")

    def start(self) -> Service:
        super().start()
        try:
            wait_until(
                "the service",
                lambda: httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200,
                timeout=60,
            )
        except TimeoutError as exc:
            raise RuntimeError(f"kernelwatch serve did not come up:\n{self.tail()}") from exc
        return self


def runner_token(env: dict[str, str], name: str) -> str:
    done = subprocess.run(
        [str(BIN / "kernelwatch"), "runner-token", "create", name],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def agent(url: str, token: str, workdir: Path, env: dict[str, str], name: str) -> Process:
    command = [
        str(BIN / "kernelwatch-runner"),
        "agent",
        "--server",
        url,
        "--token",
        token,
        "--spool",
        str(workdir / f"{name}-spool"),
        "--cache",
        str(workdir / f"{name}-cache"),
        "--poll",
        "0.2",
        "--lease-interval",
        "1",
    ]
    return Process(command, env, workdir / f"{name}.log")


def admin_client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)


def enqueue(url: str, shas: list[str], clone_url: str | None) -> list[int]:
    ids: list[int] = []
    with admin_client(url) as client:
        for i, sha in enumerate(shas):
            body = {"repository": REPOSITORY, "sha": sha, "branch": "main"}
            if clone_url:
                body["clone_url"] = clone_url
            answer = client.post("/api/v1/jobs", json=body)
            if answer.status_code != 201:
                raise RuntimeError(f"enqueue {i}: {answer.status_code} {answer.text}")
            ids.extend(answer.json()["job_ids"])
    return ids


# --- what survived -------------------------------------------------------------------------------


@dataclass
class Survey:
    """The database after the storm."""

    jobs: Counter[str]
    attempts: Counter[int]
    runs: int
    runs_per_job: Counter[int]  # how many jobs have n runs
    shapes: Counter[tuple[int, int, int]]  # (workloads, build rows, results) per run
    unanalysed: int
    run_ids: set[str]
    integrity: str


def survey(db_url: str) -> Survey:
    from sqlalchemy import func, select, text

    from service.core.db import create_db_engine
    from service.models import BuildResource, Job, Result, Run, RunWorkload

    engine = create_db_engine(db_url)
    try:
        with engine.connect() as conn:
            jobs = Counter(
                dict(conn.execute(select(Job.state, func.count()).group_by(Job.state)).all())
            )
            attempts = Counter(
                dict(conn.execute(select(Job.attempt, func.count()).group_by(Job.attempt)).all())
            )
            per_job = Counter(
                n
                for (n,) in conn.execute(
                    select(func.count()).where(Run.job_id.is_not(None)).group_by(Run.job_id)
                )
            )

            def counts(model: Any) -> dict[int, int]:
                return dict(
                    conn.execute(select(model.run_id, func.count()).group_by(model.run_id)).all()
                )

            workloads, build, results = counts(RunWorkload), counts(BuildResource), counts(Result)
            runs = dict(conn.execute(select(Run.id, Run.run_uuid)).all())
            shapes = Counter(
                (workloads.get(pk, 0), build.get(pk, 0), results.get(pk, 0)) for pk in runs
            )
            unanalysed = conn.execute(
                select(func.count()).where(
                    (Run.analysed_at.is_(None)) | (Run.change_points_at.is_(None))
                )
            ).scalar_one()
            integrity = "n/a"
            if engine.dialect.name == "sqlite":
                integrity = conn.execute(text("PRAGMA integrity_check")).scalar_one()
    finally:
        engine.dispose()
    return Survey(
        jobs, attempts, len(runs), per_job, shapes, unanalysed, set(runs.values()), integrity
    )


def backlog_empty(db_url: str) -> bool:
    return survey(db_url).unanalysed == 0


@dataclass
class Row:
    """One line of a printed table: what was tried, what survived."""

    what: str
    tried: str
    survived: str
    ok: bool


@dataclass
class Report:
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, what: str, tried: object, survived: object, ok: bool) -> None:
        self.rows.append(Row(what, str(tried), str(survived), ok))

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def table(self) -> str:
        lines = [
            f"### {self.title}",
            "",
            "| check | tried | survived | |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r.what} | {r.tried} | {r.survived} | {'PASS' if r.ok else 'FAIL'} |"
            for r in self.rows
        ]
        return "\n".join([*lines, "", *self.notes])


def spool_state(spools: list[Path]) -> tuple[int, int, int]:
    """(documents waiting, rejected, dropped for a lost lease) over the agents' spools."""
    waiting = sum(len(list(s.glob("*.json"))) for s in spools if s.is_dir())
    rejected = sum(len(list((s / "rejected").glob("*.json"))) for s in spools if s.is_dir())
    dropped = 0
    for s in spools:
        with contextlib.suppress(FileNotFoundError):
            dropped += len((s / "discarded.log").read_text().splitlines())
    return waiting, rejected, dropped


def discarded_run_ids(spool: Path) -> set[str]:
    with contextlib.suppress(FileNotFoundError):
        lines = (spool / "discarded.log").read_text().splitlines()
        return {json.loads(line)["run_id"] for line in lines}
    return set()


def judge_jobs(report: Report, found: Survey, jobs: int) -> None:
    report.add(
        "jobs ended succeeded",
        jobs,
        f"{found.jobs.get('succeeded', 0)} succeeded, "
        f"{sum(v for k, v in found.jobs.items() if k != 'succeeded')} other",
        found.jobs == Counter({"succeeded": jobs}),
    )
    report.add(
        "job runs stored once",
        jobs,
        ", ".join(f"{n} job(s) with {k} run(s)" for k, n in sorted(found.runs_per_job.items())),
        found.runs_per_job == Counter({1: jobs}),
    )


def judge_runs(report: Report, found: Survey, shape: tuple[int, int, int] | None) -> None:
    complete = found.shapes.get(shape, 0) if shape else 0
    report.add(
        "runs stored whole (workloads, build rows, results)",
        found.runs,
        f"{complete} whole {shape}, {found.runs - complete} partial",
        found.runs > 0 and complete == found.runs,
    )


# --- agent kills ---------------------------------------------------------------------------------


def spooled(spool: Path) -> list[str]:
    return [p.stem for p in spool.glob("*.json")] if spool.is_dir() else []


def agent_kills(kind: str, kills: int, postgres_url: str | None, workdir: Path) -> Report:
    from tests.runner.gitrepo import cpu_suite_repo

    report = Report(f"kill -9 of the agent mid-job, {kills} times ({kind})")
    repo, first, _ = cpu_suite_repo(workdir / "repo")
    points = ["after its claim", "while measuring", "with its result spooled"]
    tried: Counter[str] = Counter()
    spooled_at_kill: set[str] = set()
    spool = workdir / "agent-spool"
    with scratch_database(kind, postgres_url, workdir) as db_url:
        service = Service(db_url, workdir).start()
        token = runner_token(service.env, "chaos-agent")
        runner = agent(service.url, token, workdir, service.env, "agent")
        jobs = enqueue(service.url, [first] * (kills + 3), str(repo))
        rng = random.Random(1)
        # Jobs a killed agent held stay running until their lease lapses: (id, attempt) of those.
        stale: set[tuple[int, int]] = set()

        def running() -> list[dict]:
            return httpx.get(f"{service.url}/api/v1/jobs", params={"state": "running"}).json()

        def fresh() -> dict | None:
            return next((j for j in running() if (j["id"], j["attempt"]) not in stale), None)

        def state(job_id: int) -> str:
            return httpx.get(f"{service.url}/api/v1/jobs/{job_id}").json()["state"]

        try:
            while sum(tried.values()) < kills:
                point = points[sum(tried.values()) % len(points)]
                before = set(spooled(spool))  # what the restarted agent posts first
                if not runner.alive:
                    runner.start()
                queued = httpx.get(f"{service.url}/api/v1/jobs", params={"state": "queued"})
                if not queued.json() and fresh() is None:
                    # Jobs finished while a kill point was missed: give the agent another.
                    jobs += enqueue(service.url, [first], str(repo))
                wait_until("a new claim", lambda: fresh() is not None, timeout=120)
                job = fresh()
                assert job is not None
                if point == "while measuring":
                    time.sleep(rng.uniform(0.2, 1.2))  # a random moment inside the job
                elif point == "with its result spooled":
                    wait_until(
                        "a spooled result",
                        lambda j=job, old=before: (
                            bool(set(spooled(spool)) - old) or state(j["id"]) != "running"
                        ),
                        timeout=120,
                        every=0.002,
                    )
                    if not set(spooled(spool)) - before:
                        continue  # posted before we saw it: try this point on the next job
                spooled_at_kill |= set(spooled(spool))
                runner.kill9()
                stale |= {(j["id"], j["attempt"]) for j in running()}
                tried[point] += 1
                log(f"agent kill {sum(tried.values())}/{kills} {point}")
            runner.start()
            wait_until(
                "every job to succeed",
                lambda: (
                    httpx.get(f"{service.url}/api/v1/jobs", params={"state": "succeeded"})
                    .json()
                    .__len__()
                    == len(jobs)
                ),
                timeout=120 + 10 * len(jobs),
                every=0.3,
            )
            wait_until("the analysis backlog", lambda: backlog_empty(db_url), 120, every=0.3)
        finally:
            runner.stop()
            service.stop()
        found = survey(db_url)
    report.add(
        "kills",
        ", ".join(f"{n} {p}" for p, n in tried.items()),
        f"{len(jobs)} jobs, {sum(found.attempts[a] * a for a in found.attempts)} claims",
        sum(tried.values()) == kills,
    )
    judge_jobs(report, found, len(jobs))
    shape = found.shapes.most_common(1)[0][0] if found.shapes else None
    judge_runs(report, found, shape)
    dropped = discarded_run_ids(spool)
    arrived = spooled_at_kill & found.run_ids
    report.add(
        "results spooled when killed",
        len(spooled_at_kill),
        f"{len(arrived)} arrived after the restart, "
        f"{len(spooled_at_kill & dropped)} dropped (lease gone, job measured again)",
        spooled_at_kill <= found.run_ids | dropped,
    )
    waiting, rejected, _ = spool_state([spool])
    report.add(
        "spool at the end", "", f"{waiting} waiting, {rejected} rejected", not waiting + rejected
    )
    report.add(
        "analysis backlog at the end", found.runs, f"{found.unanalysed} unanalysed",
        found.unanalysed == 0,
    )  # fmt: skip
    report.notes.append(
        f"claims per job: {dict(sorted(found.attempts.items()))}; "
        f"SQLite integrity_check: {found.integrity}"
    )
    return report


# --- service kills -------------------------------------------------------------------------------


def big_document(sha: str, parent: str | None) -> dict[str, Any]:
    doc = json.loads(EXAMPLE.read_text())
    doc["run_id"] = str(uuid.uuid4())
    doc["job_id"], doc["lease_token"], doc["runner"] = None, None, None
    doc["repository"] = {"name": REPOSITORY, "url": None}
    doc["branch"] = "posted"
    doc["commit"]["sha"] = sha
    doc["commit"]["parents"] = [parent] if parent else []
    doc["commit"]["ancestors"] = [parent] if parent else []
    # 40 copies of each workload: an ingest long enough to be cut in the middle.
    doc["workloads"] = [
        {**w, "params": {**w["params"], "copy": i}} for i in range(40) for w in doc["workloads"]
    ]
    return doc


@dataclass
class Poster:
    """Posts documents one after the other; a post cut off by a dead service is sent again."""

    url: str
    docs: list[dict[str, Any]]
    in_flight: threading.Event = field(default_factory=threading.Event)
    answered: dict[str, tuple[int, int]] = field(default_factory=dict)  # run id: (status, results)
    cut_off: set[str] = field(default_factory=set)  # run ids sent more than once
    seconds: list[float] = field(default_factory=list)  # posts answered at the first try
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        try:
            with admin_client(self.url) as client:
                for doc in self.docs:
                    body = json.dumps(doc).encode()
                    while True:
                        self.in_flight.set()
                        t0 = time.monotonic()
                        try:
                            answer = client.post(
                                "/api/v1/runs",
                                content=body,
                                headers={"Content-Type": "application/json"},
                            )
                        except httpx.TransportError:
                            self.cut_off.add(doc["run_id"])
                            self.in_flight.clear()
                            time.sleep(0.05)  # the service is down: its restart is polled for
                            continue
                        self.in_flight.clear()
                        if doc["run_id"] not in self.cut_off:
                            self.seconds.append(time.monotonic() - t0)
                        if answer.status_code not in (200, 201):
                            raise RuntimeError(f"{answer.status_code} {answer.text[:300]}")
                        self.answered[doc["run_id"]] = (
                            answer.status_code,
                            answer.json()["results"],
                        )
                        break
        except BaseException as exc:
            self.error = exc
        finally:
            self.in_flight.clear()
            self.done.set()


def service_kills(kind: str, kills: int, postgres_url: str | None, workdir: Path) -> Report:
    from tests.documents import sha_for
    from tests.runner.gitrepo import cpu_suite_repo

    report = Report(f"kill -9 of the service mid-ingest, {kills} times ({kind})")
    repo, first, _ = cpu_suite_repo(workdir / "repo")
    shas = [sha_for(f"posted-{i}") for i in range(2 * kills + 5)]
    docs = [big_document(sha, shas[i - 1] if i else None) for i, sha in enumerate(shas)]
    spool = workdir / "agent-spool"
    rng = random.Random(2)
    killed_in_flight = 0
    with scratch_database(kind, postgres_url, workdir) as db_url:
        service = Service(db_url, workdir).start()
        token = runner_token(service.env, "chaos-agent")
        runner = agent(service.url, token, workdir, service.env, "agent").start()
        jobs = enqueue(service.url, [first] * max(3, kills // 2), str(repo))
        poster = Poster(service.url, docs)
        thread = threading.Thread(target=poster.run, daemon=True)
        thread.start()
        k = -1
        try:
            for k in range(kills):
                if poster.done.is_set():
                    break
                answered = len(poster.answered)
                poster.in_flight.wait(60)
                # Somewhere inside the ingest, or just after it: posts answered at the first try
                # say how long one takes.
                typical = float(np.median(poster.seconds)) if poster.seconds else 0.05
                time.sleep(rng.uniform(0, 1.1 * typical))
                in_flight = poster.in_flight.is_set()
                service.kill9()
                killed_in_flight += in_flight
                log(f"service kill {k + 1}/{kills} ({'during' if in_flight else 'between'} posts)")
                service.start()
                # The next kill cuts another document: this one must get through first.
                wait_until(
                    "the poster",
                    lambda n=answered: len(poster.answered) > n or poster.done.is_set(),
                    timeout=120,
                )
            thread.join(timeout=300)
            wait_until(
                "every job to succeed",
                lambda: (
                    len(
                        httpx.get(
                            f"{service.url}/api/v1/jobs", params={"state": "succeeded"}
                        ).json()
                    )
                    == len(jobs)
                ),
                timeout=180 + 10 * len(jobs),
                every=0.3,
            )
            wait_until("the agent's spool", lambda: not spooled(spool), 120, every=0.2)
            wait_until("the analysis backlog", lambda: backlog_empty(db_url), 120, every=0.3)
        finally:
            runner.stop()
            service.stop()
        found = survey(db_url)
    if poster.error is not None:
        report.notes.append(f"poster failed: {poster.error!r}")
    report.add(
        "kills",
        f"{k + 1}, {killed_in_flight} with a POST /api/v1/runs in flight",
        f"{len(poster.cut_off)} posts cut off and sent again (a post takes "
        f"{1000 * float(np.median(poster.seconds or [0])):.0f} ms)",
        k + 1 == kills and killed_in_flight > 0,
    )
    posted = {d["run_id"] for d in docs}
    expected = {results for _, results in poster.answered.values()}
    report.add(
        "posted documents stored once",
        len(docs),
        f"{len(posted & found.run_ids)} stored, {len(poster.answered)} answered "
        f"({sum(s == 200 for s, _ in poster.answered.values())} as already stored)",
        posted <= found.run_ids and len(poster.answered) == len(docs) and len(expected) == 1,
    )
    judge_jobs(report, found, len(jobs))
    shapes = sorted(found.shapes.items(), key=lambda kv: -kv[1])
    wholes = {shape for shape, _ in shapes[:2]}  # the posted documents' and the agent's
    complete = sum(n for shape, n in found.shapes.items() if shape in wholes)
    report.add(
        "runs stored whole (workloads, build rows, results)",
        found.runs,
        f"{complete} whole {sorted(wholes)}, {found.runs - complete} partial",
        complete == found.runs and len(found.shapes) <= 2,
    )
    waiting, rejected, dropped = spool_state([spool])
    report.add(
        "agent's spooled results",
        "posts cut off by the kills",
        f"{waiting} waiting, {rejected} rejected, {dropped} dropped at the end",
        not waiting + rejected,
    )
    report.add(
        "analysis backlog at the end", found.runs, f"{found.unanalysed} unanalysed",
        found.unanalysed == 0,
    )  # fmt: skip
    report.notes.append(
        f"claims per job: {dict(sorted(found.attempts.items()))}; "
        f"SQLite integrity_check: {found.integrity}"
    )
    return report


# --- load ----------------------------------------------------------------------------------------


def stub_agent_main(argv: list[str]) -> int:
    """The runner's real agent loop, with the measurement replaced by a recorded document."""
    from runner.agent import run_agent

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


# --- main ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.chaos", description=__doc__.split("\n")[0]
    )
    p.add_argument("--database", choices=["sqlite", "postgres"], default="postgres")
    p.add_argument(
        "--postgres-url", default=os.environ.get("KERNELWATCH_TEST_POSTGRES_URL"), help="admin URL"
    )
    p.add_argument("--agent-kills", type=int, default=20)
    p.add_argument("--service-kills", type=int, default=20)
    p.add_argument("--load-jobs", type=int, default=500)
    p.add_argument("--load-agents", type=int, default=8)
    p.add_argument("--readers", type=int, default=20)
    p.add_argument("--read-seconds", type=float, default=15.0)
    p.add_argument("--only", choices=["crash", "load"])
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["stub-agent"]:
        return stub_agent_main(argv[1:])
    args = parse_args(argv)
    if args.database == "postgres" and not args.postgres_url:
        raise SystemExit(
            "--database postgres needs --postgres-url or KERNELWATCH_TEST_POSTGRES_URL"
        )
    reports: list[Report] = []
    with contextlib.ExitStack() as stack:
        if args.keep:
            work = Path(tempfile.mkdtemp(prefix="kw-chaos-"))
            print(f"logs are kept in {work}", flush=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kw-chaos-")))
        steps: list[tuple[str, Callable[[Path], Report]]] = []
        db, pg = args.database, args.postgres_url
        if args.only in (None, "crash"):
            steps.append(("agent", lambda w: agent_kills(db, args.agent_kills, pg, w)))
            steps.append(("service", lambda w: service_kills(db, args.service_kills, pg, w)))
        if args.only in (None, "load"):
            sizes = (args.load_jobs, args.load_agents, args.readers, args.read_seconds)
            steps.append(("load", lambda w: load(db, *sizes, pg, w)))
        for name, step in steps:
            folder = work / name
            folder.mkdir()
            report = step(folder)
            reports.append(report)
            print(report.table(), flush=True)
            print(flush=True)
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())

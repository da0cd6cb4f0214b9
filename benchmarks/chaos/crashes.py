"""kill -9 of the agent mid-job and of the service mid-ingest: what was tried, what survived."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.chaos.processes import (
    EXAMPLE,
    REPOSITORY,
    Service,
    admin_client,
    agent,
    enqueue,
    log,
    runner_token,
    scratch_database,
    wait_until,
)
from benchmarks.chaos.survey import (
    Report,
    backlog_empty,
    discarded_run_ids,
    judge_end,
    judge_jobs,
    judge_runs,
    spool_state,
    spooled,
    survey,
)
from service.core import failpoints
from service.core.db import create_db_engine

AFTER_STORE_S = 0.25


def paused_service(db_url: str, workdir: Path) -> Service:
    """The service, started with every stored run waiting AFTER_STORE_S before its answer
    (service.core.failpoints)."""
    service = Service(db_url, workdir)
    service.env[failpoints.ENV] = f"after_store={AFTER_STORE_S}"
    return service.start()


def stored(engine: Any, run_id: str) -> bool:
    from sqlalchemy import select

    from service.models import Run

    with engine.connect() as conn:
        return conn.execute(select(Run.id).where(Run.run_uuid == run_id)).first() is not None


def agent_kills(kind: str, kills: int, postgres_url: str | None, workdir: Path) -> Report:
    from tests.runner.gitrepo import cpu_suite_repo

    report = Report(f"kill -9 of the agent mid-job, {kills} times ({kind})")
    repo, first, _ = cpu_suite_repo(workdir / "repo")
    points = ["after its claim", "while measuring", "with its result spooled"]
    tried: Counter[str] = Counter()
    spooled_at_kill: set[str] = set()
    spool = workdir / "agent-spool"
    with scratch_database(kind, postgres_url, workdir) as db_url:
        # The agent removes a spooled result once the service has answered for it: the pause
        # after each store keeps it there long enough for the kill "with its result spooled".
        service = paused_service(db_url, workdir)
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
                now = set(spooled(spool))  # one listing: the file may go at any moment
                if point == "with its result spooled" and not now - before:
                    continue  # posted before we saw it: try this point on the next job
                spooled_at_kill |= now
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
    judge_end(report, found)
    return report


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
    current: str = ""  # the run id of the document being posted

    def run(self) -> None:
        try:
            with admin_client(self.url) as client:
                for doc in self.docs:
                    body = json.dumps(doc).encode()
                    self.current = doc["run_id"]
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
        # Kills land between the commit and the answer too, not only inside the ingest.
        service = paused_service(db_url, workdir)
        token = runner_token(service.env, "chaos-agent")
        runner = agent(service.url, token, workdir, service.env, "agent").start()
        jobs = enqueue(service.url, [first] * max(3, kills // 2), str(repo))
        poster = Poster(service.url, docs)
        engine = create_db_engine(db_url)
        thread = threading.Thread(target=poster.run, daemon=True)
        thread.start()
        k = -1
        try:
            for k in range(kills):
                if poster.done.is_set():
                    break
                answered = len(poster.answered)
                poster.in_flight.wait(60)
                if k % 2:
                    # Once the document is committed, inside the pause before its answer.
                    run_id = poster.current
                    wait_until(
                        "the posted run's commit",
                        lambda r=run_id: stored(engine, r) or not poster.in_flight.is_set(),
                        timeout=120,
                        every=0.01,
                    )
                else:
                    # Somewhere inside the ingest, or just after it: posts answered at the first
                    # try say how long one takes.
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
            engine.dispose()
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
    stored_unanswered = sum(s == 200 for s, _ in poster.answered.values())
    report.add(
        "kills between the commit and the answer",
        f"every other kill, once the run is committed ({AFTER_STORE_S:g} s before its answer)",
        f"{stored_unanswered} posts stored, cut off, sent again and answered 'already stored'",
        stored_unanswered > 0,
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
    judge_end(report, found)
    return report

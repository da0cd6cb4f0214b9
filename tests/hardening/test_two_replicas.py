"""Two `kernelwatch serve` processes on one PostgreSQL, a client sending to them in turn: a burst
of documents and pushes split between them stores each run once, opens each alert once, queues
each confirmation once, and decides as one process posted one by one."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.core.db import create_db_engine
from service.models import Job, Repository, Run, WebhookDelivery
from tests.conftest import ADMIN_TOKEN, _truncate_all
from tests.documents import sha_for
from tests.e2e import free_port, wait_for
from tests.history import Line
from tests.live_server import Senders, client_for
from tests.service.api.routes.test_webhooks import SECRET, Hook, push_payload
from tests.service.evaluation.alerts.test_lifecycle import runner_token
from tests.service.histories.test_step_and_fix import (
    KERNELS,
    FakeRunner,
    assert_step_fix_story,
    decisions,
    settle,
    step_and_fix,
    verdicts,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_engine(postgres_database: str) -> Iterator[Engine]:
    _truncate_all(postgres_database)
    engine = create_db_engine(postgres_database)
    yield engine
    engine.dispose()


@pytest.fixture
def replicas(postgres_database: str, pg_engine: Engine, tmp_path: Path) -> Iterator[list[str]]:
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": postgres_database,
           "KERNELWATCH_ADMIN_TOKEN": ADMIN_TOKEN, "KERNELWATCH_WEBHOOK_SECRET": SECRET,
           "KERNELWATCH_ANALYSIS_DELAY_SECONDS": "0.2", "KERNELWATCH_ANALYSIS_POLL_SECONDS": "0.5",
           "KERNELWATCH_LOG_LEVEL": "WARNING"}  # fmt: skip
    procs, urls = [], []
    try:
        for i in range(2):
            port = free_port()
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "service.cli", "serve", "--port", str(port)], cwd=ROOT,
                env={**env, "KERNELWATCH_DATA_DIR": str(tmp_path / f"r{i}")},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs, strict=True):
            wait_for(lambda u=url: httpx.get(f"{u}/healthz", timeout=2).status_code == 200, proc)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)


class RoundRobin:
    """The replicas taken in turn (a balancer as simple as it gets); each sending thread has a
    client of its own per replica (tests.live_server.Senders)."""

    def __init__(self, urls: list[str], token: str) -> None:
        self.senders = [Senders(u, token, timeout=60) for u in urls]
        self.clients = [client_for(u, token, timeout=60) for u in urls]  # for one thread
        self._turn = itertools.cycle(range(len(urls)))
        self._lock = threading.Lock()

    def next(self) -> httpx.Client:
        with self._lock:
            return self.senders[next(self._turn)].client()

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for senders in self.senders:
            senders.close()


def count(engine: Engine, model: type, *where: object) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(model).where(*where)).scalar_one()


def test_two_replicas_store_alert_and_queue_once_and_decide_as_one(
    replicas: list[str], pg_engine: Engine
) -> None:
    step, fix, n = 10, 20, 30
    at = step_and_fix(n, step, fix)
    admin = RoundRobin(replicas, ADMIN_TOKEN)
    try:
        ordered = Line(KERNELS, repository="acme/one-process", seed=3)
        one = admin.clients[0]
        for i in range(n):  # one process, one by one
            assert one.post("/api/v1/runs", json=ordered.document(i, at[i])).status_code == 201
            if i % 10 == 9:
                settle(pg_engine)
        burst = Line(KERNELS, repository="acme/two-replicas", seed=3)  # the same measurements
        shuffled = list(range(n))
        random.Random(11).shuffle(shuffled)

        def post(i: int) -> int:
            return admin.next().post("/api/v1/runs", json=burst.document(i, at[i])).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(post, shuffled)) == {201}
            assert set(pool.map(post, shuffled)) == {200}  # again, to the other replica
        settle(pg_engine)
        repo_id = select(Repository.id).where(Repository.name == burst.repository)
        assert count(pg_engine, Run, Run.repository_id == repo_id.scalar_subquery()) == n
        assert_step_fix_story(verdicts(one, burst, n), step, fix)
        assert decisions(one, burst, n) == decisions(one, ordered, n)
        for line in (ordered, burst):  # one confirmation each, however many processes saw it
            repo = select(Repository.id).where(Repository.name == line.repository)
            confirms = count(pg_engine, Job, Job.kind == "confirm",
                             Job.repository_id == repo.scalar_subquery())  # fmt: skip
            assert confirms == 1, line.repository
        token = {"Authorization": f"Bearer {runner_token(pg_engine)}"}
        with httpx.Client(base_url=replicas[1], timeout=60, headers=token) as runner:
            FakeRunner(runner, [ordered, burst], lambda j: at[j]).work()
        for line in (ordered, burst):
            alerts = one.get("/api/v1/alerts", params={"repository": line.repository}).json()
            assert [(a["state"], a["commit"]) for a in alerts] == [("fixed", line.sha(step))]
        # pushes: each delivered to both replicas at once, under one delivery id
        hooks = [Hook(senders) for senders in admin.senders]  # a client to each thread

        def deliver(k: int) -> list[int]:
            payload = push_payload(after=sha_for(f"pushed-{k}"), repo="acme/pushed")
            with ThreadPoolExecutor(2) as both:
                sent = both.map(lambda h: h.send(payload, delivery=f"push-{k}"), hooks)
                return sorted(a.status_code for a in sent)

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(deliver, range(10)))
        assert answers == [[200, 202]] * 10  # one queued it, the other saw it done
        pushed = select(Repository.id).where(Repository.name == "acme/pushed")
        assert count(pg_engine, Job, Job.repository_id == pushed.scalar_subquery()) == 10
        assert count(pg_engine, WebhookDelivery) == 10
    finally:
        admin.close()

"""GET /metrics: Prometheus text that parses, counters that move with what happened, gauges read
from the database, on SQLite and PostgreSQL; and one sum over several worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, update

from service.models import Alert
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.e2e import ADMIN, free_port, wait_for
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import claim, expire_leases, make_jobs, make_runner

FAMILIES = {
    "kernelwatch_runs_ingested", "kernelwatch_ingest_seconds", "kernelwatch_jobs_claimed",
    "kernelwatch_jobs_failed", "kernelwatch_jobs_expired", "kernelwatch_http_requests",
    "kernelwatch_http_request_seconds", "kernelwatch_queue_jobs",
    "kernelwatch_analysis_backlog_runs", "kernelwatch_analysis_backlog_oldest_seconds",
    "kernelwatch_alerts", "kernelwatch_runner_last_seen_seconds", "kernelwatch_runners",
}  # fmt: skip


def scrape(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, from /metrics parsed as Prometheus text."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    families = list(text_string_to_metric_families(answer.text))
    assert {f.name for f in families} >= FAMILIES
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_counters_follow_what_happened_and_gauges_read_the_database(
    server: LiveServer, engine: Engine
) -> None:
    with server.client(ADMIN_TOKEN) as admin:
        before = scrape(admin)
        assert admin.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        assert (
            admin.post("/api/v1/runs", json=document(commit="b", parents=["a"])).status_code == 201
        )
        make_jobs(engine, 3, labels={"gpu": "h100"})
        with server.client(make_runner(engine, "gpu-1", {"gpu": "h100"})) as runner:
            first = claim(runner)
            assert first is not None
            token = first["attempt_token"]
            failed = runner.post(f"/api/v1/jobs/{first['job']['id']}/fail",
                                 json={"attempt_token": token, "log_tail": "boom"})  # fmt: skip
            assert failed.status_code == 200, failed.text
            assert claim(runner) is not None
            expire_leases(engine)
            assert claim(runner) is not None  # reaps the expired lease first
        with engine.begin() as conn:
            conn.execute(update(Alert).values(state="open"))
        after = scrape(admin)

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("kernelwatch_runs_ingested_total", outcome="stored") == 2
    assert delta("kernelwatch_ingest_seconds_count") == 2
    assert delta("kernelwatch_jobs_claimed_total") == 3
    assert delta("kernelwatch_jobs_failed_total") == 1
    assert delta("kernelwatch_jobs_expired_total") == 1
    route = {"route": "/api/v1/runs", "method": "POST", "status": "201"}
    assert delta("kernelwatch_http_requests_total", **route) == 2
    assert delta("kernelwatch_http_requests_total", route="/api/v1/jobs/claim", method="POST",
                 status="200") == 3  # fmt: skip
    # The database's gauges: of the 3 jobs the first failed, was retried and lost its lease on
    # its last attempt (failed), the second runs, the third waits.
    queued = after[("kernelwatch_queue_jobs", (("labels", "gpu=h100"), ("state", "queued")))]
    running = after[("kernelwatch_queue_jobs", (("labels", "gpu=h100"), ("state", "running")))]
    assert (queued, running) == (1, 1)
    assert after[("kernelwatch_runners", ())] == 1
    assert 0 <= after[("kernelwatch_runner_last_seen_seconds", (("runner", "gpu-1"),))] < 60
    assert after[("kernelwatch_analysis_backlog_runs", ())] >= 0
    opened = after[("kernelwatch_alerts", (("state", "open"),))]
    assert opened == sum(v for (n, _), v in after.items() if n == "kernelwatch_alerts")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_several_worker_processes_answer_one_sum(db_url: str, tmp_path: Path) -> None:
    """`kernelwatch serve --workers 2`: both workers count requests (each its own files in the
    multiprocess folder), and whichever answers /metrics gives the sum of both."""
    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNELWATCH_", "PROMETHEUS"))}
    env.update(KERNELWATCH_DATABASE_URL=db_url, KERNELWATCH_ADMIN_TOKEN=ADMIN,
               KERNELWATCH_DATA_DIR=str(tmp_path / "data"),
               PROMETHEUS_MULTIPROC_DIR=str(shared))  # fmt: skip
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    key = ("kernelwatch_http_requests_total",
           (("method", "GET"), ("route", "/api/v1/alerts"), ("status", "200")))  # fmt: skip
    with open(tmp_path / "service.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.launch", "serve", "--port", str(port), "--workers",
             "2"], env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, proc)
            for _ in range(60):  # a new connection each: the workers take turns accepting
                assert httpx.get(f"{url}/api/v1/alerts", timeout=10).status_code == 200
            counted = {p.name for p in shared.glob("counter_*.db")}
            sums = set()
            for _ in range(20):
                with httpx.Client(base_url=url, timeout=10) as client:
                    sums.add(scrape(client)[key])
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert len(counted) >= 2, counted  # both workers counted requests
    assert sums == {60.0}

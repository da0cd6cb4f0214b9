"""Jobs, leases and runner tokens over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session

from service.core.settings import Settings
from service.core.tokens import new_token, token_hash
from service.models import Job, Repository, Result, Run, Runner
from service.models.base import utcnow
from service.store.jobs import queue
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


def make_runner(engine: Engine, name: str, labels: dict | None = None) -> str:
    token = new_token("kwr")
    with Session(engine) as session, session.begin():
        session.add(Runner(name=name, labels=labels or {}, token_hash=token_hash(token)))
    return token


def make_jobs(engine: Engine, count: int, labels: dict | None = None) -> list[int]:
    with Session(engine) as session, session.begin():
        repo = session.scalars(select(Repository)).first() or Repository(
            name="acme/kernels", clone_url="https://example.com/acme/kernels.git"
        )
        session.add(repo)
        session.flush()
        jobs = [
            job
            for i in range(count)
            for job in queue.enqueue(
                session,
                repository_id=repo.id,
                sha=sha_for(f"j{i}"),
                branch="main",
                label_sets=[labels or {}],
                max_attempts=2,
            )
        ]
        return [j.id for j in jobs]


def expire_leases(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(Job)
            .where(Job.state == "running")
            .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        )


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as client:
        yield client


def claim(client: httpx.Client) -> dict | None:
    answer = client.post("/api/v1/jobs/claim")
    if answer.status_code == 204:
        return None
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_eight_concurrent_claimers_take_each_of_500_jobs_once(
    server: LiveServer, engine: Engine
) -> None:
    job_ids = make_jobs(engine, 500)
    tokens = [make_runner(engine, f"r{i}") for i in range(8)]
    claimed: list[tuple[str, int]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(token: str) -> None:
        try:
            with server.client(token) as client:
                while (got := claim(client)) is not None:
                    with lock:
                        claimed.append((token, got["job"]["id"]))
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors
    counts = Counter(job_id for _, job_id in claimed)
    assert sorted(counts) == sorted(job_ids)
    assert set(counts.values()) == {1}
    assert len({token for token, _ in claimed}) > 1  # the claimers really competed
    with engine.connect() as conn:
        states = conn.execute(select(Job.state, func.count()).group_by(Job.state)).all()
    assert dict(states) == {"running": 500}


def test_claims_respect_labels(server: LiveServer, engine: Engine) -> None:
    make_jobs(engine, 1, labels={"gpu": "h100"})
    with server.client(make_runner(engine, "a100", {"gpu": "a100"})) as other:
        assert claim(other) is None
    with server.client(make_runner(engine, "h100", {"gpu": "h100", "os": "linux"})) as right:
        got = claim(right)
    assert got is not None
    assert got["job"]["required_labels"] == {"gpu": "h100"}
    assert got["clone_url"] == "https://example.com/acme/kernels.git"
    assert got["attempt_token"].startswith("kwa_")


def test_expired_lease_requeues_then_fails_after_max_attempts(
    server: LiveServer, engine: Engine
) -> None:
    (job_id,) = make_jobs(engine, 1)
    with server.client(make_runner(engine, "r")) as client:
        first = claim(client)
        expire_leases(engine)
        second = claim(client)  # the claim reaps first, so the same job comes back
        assert second is not None and first is not None
        assert second["job"]["id"] == job_id
        assert second["job"]["attempt"] == 2
        assert "expired" in second["job"]["failure"]
        expire_leases(engine)
        assert claim(client) is None
    with engine.connect() as conn:
        job = conn.execute(select(Job)).one()
    assert job.state == "failed"
    assert "lost after 2 attempts" in job.failure


def test_late_result_from_an_expired_attempt_is_refused(server: LiveServer, engine: Engine) -> None:
    (job_id,) = make_jobs(engine, 1)
    token = make_runner(engine, "h100-a")
    with server.client(token) as client:
        late = claim(client)
        assert late is not None
        expire_leases(engine)
        current = claim(client)
        assert current is not None
        doc = document(commit="j0")
        doc["job_id"], doc["lease_token"] = job_id, late["attempt_token"]
        refused = client.post("/api/v1/runs", json=doc)
        assert refused.status_code == 409
        assert "not the current attempt" in refused.json()["detail"]
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0
            assert conn.execute(select(func.count()).select_from(Result)).scalar_one() == 0
        doc["lease_token"] = current["attempt_token"]
        accepted = client.post("/api/v1/runs", json=doc)
        assert accepted.status_code == 201, accepted.text
        job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["state"] == "succeeded"
    assert job["finished_at"] is not None


def test_runner_results_need_a_claim_and_the_right_commit(
    server: LiveServer, engine: Engine
) -> None:
    (job_id,) = make_jobs(engine, 1)
    with server.client(make_runner(engine, "h100-a")) as client:
        got = claim(client)
        assert got is not None
        no_job = client.post("/api/v1/runs", json=document(commit="j0"))
        assert no_job.status_code == 409
        wrong = document(commit="elsewhere")
        wrong["job_id"], wrong["lease_token"] = job_id, got["attempt_token"]
        assert client.post("/api/v1/runs", json=wrong).status_code == 409
        other_name = document(commit="j0")
        other_name["job_id"], other_name["lease_token"] = job_id, got["attempt_token"]
        other_name["runner"]["name"] = "impostor"
        assert client.post("/api/v1/runs", json=other_name).status_code == 409
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_lease_extension_failure_and_release(server: LiveServer, engine: Engine) -> None:
    make_jobs(engine, 2)
    with server.client(make_runner(engine, "r")) as client:
        got = claim(client)
        assert got is not None
        job_id, attempt = got["job"]["id"], {"attempt_token": got["attempt_token"]}
        before = got["job"]["lease_expires_at"]
        extended = client.post(f"/api/v1/jobs/{job_id}/lease", json=attempt)
        assert extended.status_code == 200
        assert extended.json()["lease_expires_at"] >= before
        bad = client.post(f"/api/v1/jobs/{job_id}/lease", json={"attempt_token": "kwa_nope"})
        assert bad.status_code == 409
        failed = client.post(
            f"/api/v1/jobs/{job_id}/fail", json={**attempt, "log_tail": "nvcc: error: boom"}
        )
        assert failed.json()["state"] == "failed"
        assert failed.json()["failure"] == "nvcc: error: boom"
        again = client.post(f"/api/v1/jobs/{job_id}/fail", json=attempt)
        assert again.status_code == 409
        second = claim(client)
        assert second is not None
        released = client.post(
            f"/api/v1/jobs/{second['job']['id']}/release",
            json={"attempt_token": second["attempt_token"]},
        )
        assert released.json()["state"] == "queued"
        assert released.json()["attempt"] == 0
        runners = client.get("/api/v1/runners").json()
    assert runners[0]["current_job_id"] is None


def test_revoked_and_unknown_tokens_are_refused(server: LiveServer, engine: Engine) -> None:
    make_jobs(engine, 1)
    token = make_runner(engine, "gone")
    with engine.begin() as conn:
        conn.execute(update(Runner).values(revoked_at=utcnow()))
    with server.client(token) as client:
        answer = client.post("/api/v1/jobs/claim")
        assert answer.status_code == 401
        assert "revoked" in answer.json()["detail"]
        assert client.post("/api/v1/runs", json=document(commit="j0")).status_code == 401
    with server.client("kwr_unknown") as client:
        assert client.post("/api/v1/jobs/claim").status_code == 401
    with server.client(ADMIN_TOKEN) as client:
        # The admin token is not a runner: it cannot claim.
        assert client.post("/api/v1/jobs/claim").status_code == 401


def test_register_heartbeat_and_listings(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    token = make_runner(engine, "h100-a", {"gpu": "h100"})
    created = admin.post(
        "/api/v1/jobs",
        json={
            "repository": "acme/kernels",
            "sha": sha_for("manual").upper(),
            "branch": "dev",
            "clone_url": "https://example.com/acme/kernels.git",
        },
    )
    assert created.status_code == 201, created.text
    with server.client(token) as client:
        registered = client.post(
            "/api/v1/runners/register",
            json={
                "host": "gpu-host-01",
                "labels": {"gpu": "other", "cuda": "13"},
                "environment": {"gpu": "NVIDIA H100 80GB HBM3"},
            },
        )
        assert registered.json()["labels"] == {"gpu": "h100"}  # the token's
        assert registered.json()["reported_labels"] == {"gpu": "other", "cuda": "13"}
        assert client.post("/api/v1/runners/heartbeat").status_code == 200
        got = claim(client)
        assert got is not None
    runners = admin.get("/api/v1/runners").json()
    assert runners[0]["host"] == "gpu-host-01"
    assert runners[0]["current_job_id"] == got["job"]["id"]
    listed = admin.get(
        "/api/v1/jobs",
        params={"state": "running", "repository": "acme/kernels", "commit": sha_for("manual")[:8]},
    ).json()
    assert [j["id"] for j in listed] == created.json()["job_ids"]
    assert listed[0]["runner"] == "h100-a"
    assert admin.get("/api/v1/jobs", params={"state": "queued"}).json() == []
    assert admin.get("/api/v1/jobs", params={"state": "bogus"}).status_code == 422
    assert admin.get("/api/v1/jobs", params={"repository": "no/such"}).status_code == 404
    assert admin.get("/api/v1/jobs/999999").status_code == 404
    nobody = httpx.post(
        f"{server.url}/api/v1/jobs", json={"repository": "a/b", "sha": sha_for("x")}
    )
    assert nobody.status_code == 401


def test_cancel_by_admin(admin: httpx.Client, engine: Engine) -> None:
    (job_id,) = make_jobs(engine, 1)
    cancelled = admin.post(f"/api/v1/jobs/{job_id}/cancel")
    assert cancelled.json()["state"] == "cancelled"
    assert admin.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 409


def test_reaper_runs_in_the_background(settings: Settings, engine: Engine) -> None:
    from service.api.app import create_app

    make_jobs(engine, 1)
    token = make_runner(engine, "r")
    settings.reaper_interval_seconds = 0.2
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(token) as client:
        assert claim(client) is not None
        expire_leases(engine)
        deadline = threading.Event()
        for _ in range(50):
            with engine.connect() as conn:
                if conn.execute(select(Job.state)).scalar_one() == "queued":
                    break
            deadline.wait(0.1)
    with engine.connect() as conn:
        assert conn.execute(select(Job.state)).scalar_one() == "queued"


def test_a_runner_reports_its_health_and_an_unhealthy_one_gets_no_job(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    token = make_runner(engine, "h100-a")
    make_jobs(engine, 1)
    with server.client(token) as client:
        vague = client.post("/api/v1/runners/health", json={"healthy": False, "reason": " "})
        assert vague.status_code == 422 and "reason" in vague.text
        sick = client.post(
            "/api/v1/runners/health",
            json={"healthy": False, "reason": "gpu missing: cudaErrorNoDevice"},
        )
        assert sick.status_code == 200 and not sick.json()["healthy"]
        since = sick.json()["unhealthy_since"]
        again = client.post("/api/v1/runners/health", json={"healthy": False, "reason": "still"})
        assert again.json()["unhealthy_since"] == since  # since the first report
        refused = client.post("/api/v1/jobs/claim")
        assert refused.status_code == 409 and "still" in refused.json()["detail"]
        listed = admin.get("/api/v1/runners").json()[0]
        assert (listed["healthy"], listed["unhealthy_reason"]) == (False, "still")
        well = client.post("/api/v1/runners/health", json={"healthy": True})
        assert well.json()["healthy"] and well.json()["unhealthy_since"] is None
        assert claim(client) is not None
    with engine.connect() as conn:
        running = select(func.count()).select_from(Job).where(Job.state == "running")
        assert conn.execute(running).scalar_one() == 1


def test_a_post_after_the_lease_expired_is_409_before_the_reaper_runs(
    settings: Settings, engine: Engine
) -> None:
    from service.api.app import create_app

    settings.reaper_interval_seconds = 0  # the reaper never runs: the post itself must refuse
    token = make_runner(engine, "h100-a")
    make_jobs(engine, 1)
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(token) as client:
        got = claim(client)
        assert got is not None
        expire_leases(engine)
        doc = document(commit="j0")
        doc["job_id"], doc["lease_token"] = got["job"]["id"], got["attempt_token"]
        doc["runner"]["name"] = "h100-a"
        posted = client.post("/api/v1/runs", json=doc)
        assert posted.status_code == 409 and "expired at" in posted.json()["detail"]
        attempt = {"attempt_token": got["attempt_token"]}
        extended = client.post(f"/api/v1/jobs/{got['job']['id']}/lease", json=attempt)
        assert extended.status_code == 409 and "expired at" in extended.json()["detail"]
    with Session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 0
        assert session.get(Job, got["job"]["id"]).state == "running"  # the reaper's to requeue


def test_a_job_that_keeps_failing_with_retry_ends_failed_after_its_last_attempt(
    server: LiveServer, engine: Engine
) -> None:
    """The agent asks for a retry on every failure: max_attempts alone stops the loop."""
    (job_id,) = make_jobs(engine, 1)  # max_attempts=2
    seen = []
    with server.client(make_runner(engine, "r")) as client:
        for _ in range(2):
            got = claim(client)
            assert got is not None and got["job"]["id"] == job_id
            failed = client.post(
                f"/api/v1/jobs/{job_id}/fail",
                json={"attempt_token": got["attempt_token"], "log_tail": "boom", "retry": True},
            )
            assert failed.status_code == 200, failed.text
            seen.append((failed.json()["attempt"], failed.json()["state"]))
        assert claim(client) is None
    assert seen == [(1, "queued"), (2, "failed")]
    with engine.connect() as conn:
        job = conn.execute(select(Job)).one()
    assert (job.state, job.attempt, job.failure) == ("failed", 2, "boom")
    assert job.finished_at is not None

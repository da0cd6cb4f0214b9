"""A runner's token can do its job and no more (issue 35, item 2): what a job fixed (repository,
branch, commit, pull request) comes from the job, and the labels an admin gave a token bound the
jobs it may claim, whatever the runner reports about itself."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from service.models import Job, Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import claim, make_jobs, make_runner


def _claimed_document(client: httpx.Client) -> tuple[dict, dict]:
    claimed = claim(client)
    assert claimed is not None
    doc = document(commit=claimed["job"]["commit"])
    doc["job_id"], doc["lease_token"] = claimed["job"]["id"], claimed["attempt_token"]
    return claimed, doc


def _runs(engine: Engine) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("branch", "evil"),
        ("repository", {"name": "acme/other", "url": "https://example.com/acme/other.git"}),
        ("pull_request", {"number": 7, "base_ref": "main"}),  # (its branch is pull/7)
    ],
)
def test_a_result_filed_elsewhere_than_its_job_is_a_conflict(
    server: LiveServer, engine: Engine, field: str, value: object
) -> None:
    make_jobs(engine, 1)
    with server.client(make_runner(engine, "h100-a")) as client:
        claimed, doc = _claimed_document(client)
        moved = {**doc, field: value, **({"branch": "pull/7"} if field == "pull_request" else {})}
        answer = client.post("/api/v1/runs", json=moved)
        assert answer.status_code == 409, answer.text
        assert f"job {claimed['job']['id']} is for" in answer.json()["detail"]
        assert _runs(engine) == 0
        with Session(engine) as session:  # the job is still its runner's to finish
            assert session.get(Job, claimed["job"]["id"]).state == "running"
        assert client.post("/api/v1/runs", json=doc).status_code == 201
    assert _runs(engine) == 1


def test_a_pull_requests_job_takes_only_its_own_pull_request(
    server: LiveServer, engine: Engine
) -> None:
    (job_id,) = make_jobs(engine, 1)
    with Session(engine) as session, session.begin():
        job = session.get(Job, job_id)
        job.branch, job.payload = "pull/12", {"pull_request": {"number": 12, "base_ref": "main"}}
    with server.client(make_runner(engine, "h100-a")) as client:
        _, doc = _claimed_document(client)
        doc["branch"] = "pull/12"
        for other in (None, {"number": 12, "base_ref": "dev"}):
            answer = client.post("/api/v1/runs", json={**doc, "pull_request": other})
            assert answer.status_code == 409, (other, answer.text)
            assert "is for pull request" in answer.json()["detail"]
        own = {**doc, "pull_request": {"number": 12, "base_ref": "main"}}
        assert client.post("/api/v1/runs", json=own).status_code == 201


def test_labels_a_runner_reports_never_widen_what_its_token_may_claim(
    server: LiveServer, engine: Engine
) -> None:
    make_jobs(engine, 1, labels={"gpu": "b200-secret-pool"})
    unlabelled = make_runner(engine, "anyone")
    with server.client(unlabelled) as client:
        registered = client.post(
            "/api/v1/runners/register", json={"labels": {"gpu": "b200-secret-pool"}}
        )
        assert registered.status_code == 200
        assert registered.json()["labels"] == {}
        assert registered.json()["reported_labels"] == {"gpu": "b200-secret-pool"}
        assert claim(client) is None
    # A token given that label takes it; one given it whose host reports another does not.
    narrowed = make_runner(engine, "b200-b", {"gpu": "b200-secret-pool"})
    with server.client(narrowed) as client:
        client.post("/api/v1/runners/register", json={"labels": {"gpu": "h100"}})
        assert claim(client) is None
    trusted = make_runner(engine, "b200-a", {"gpu": "b200-secret-pool"})
    with server.client(trusted) as client:
        client.post("/api/v1/runners/register", json={"labels": {"cuda": "13"}})
        assert claim(client) is not None
    with server.client(ADMIN_TOKEN) as admin:
        listed = {r["name"]: r for r in admin.get("/api/v1/runners").json()}
    assert listed["b200-a"]["claims_by"] == {"gpu": "b200-secret-pool", "runner": "b200-a"}
    assert listed["b200-b"]["claims_by"] == {"runner": "b200-b"}
    assert listed["anyone"]["claims_by"] == {"runner": "anyone"}


def test_a_runner_cannot_post_under_another_runners_lease(
    server: LiveServer, engine: Engine
) -> None:
    """Runner B with runner A's job id and lease token: refused, nothing stored, A's job its own."""
    make_jobs(engine, 1)
    with (
        server.client(make_runner(engine, "h100-a")) as a,
        server.client(make_runner(engine, "h100-b")) as b,
    ):
        claimed, doc = _claimed_document(a)
        doc.pop("runner", None)  # naming no runner: only the lease can tell A's post from B's
        answer = b.post("/api/v1/runs", json=doc)
        assert answer.status_code == 409, answer.text
        assert "leased to another runner" in answer.json()["detail"]
        assert _runs(engine) == 0
        attempt = {"attempt_token": claimed["attempt_token"]}
        for path in ("lease", "fail"):
            refused = b.post(f"/api/v1/jobs/{claimed['job']['id']}/{path}", json=attempt)
            assert refused.status_code == 409, (path, refused.text)
        assert a.post("/api/v1/runs", json=doc).status_code == 201

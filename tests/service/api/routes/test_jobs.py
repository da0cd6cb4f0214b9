"""The job queue's routes (service.api.routes.jobs) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from service.store.jobs import runners
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

MAX_ID = 2**31 - 1
CLONE_URL = "https://example.com/acme/kernels.git"


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


@pytest.fixture
def runner(server: LiveServer, engine: Engine) -> Iterator[httpx.Client]:
    with server.client(make_runner(engine, "gpu-1", {"gpu": "h100"})) as c:
        yield c


def queue(admin: httpx.Client, label: str, **body: object) -> int:
    answer = admin.post("/api/v1/jobs", json={"repository": "acme/kernels", "sha": sha_for(label),
                                              "clone_url": CLONE_URL, **body})  # fmt: skip
    assert answer.status_code == 201, answer.text
    (job_id,) = answer.json()["job_ids"]
    return job_id


def claim(runner: httpx.Client) -> tuple[dict, str]:
    answer = runner.post("/api/v1/jobs/claim")
    assert answer.status_code == 200, answer.text
    return answer.json()["job"], answer.json()["attempt_token"]


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_a_job_queued_by_hand_is_queued_for_the_repositorys_runners(
    admin: httpx.Client, engine: Engine
) -> None:
    answer = admin.post("/api/v1/jobs", json={"repository": "acme/kernels", "clone_url": CLONE_URL,
                                              "sha": sha_for("a").upper()})  # fmt: skip
    assert answer.status_code == 201, answer.text
    assert answer.json()["detail"] == "queued 1 job(s)"
    (job_id,) = answer.json()["job_ids"]
    job = admin.get(f"/api/v1/jobs/{job_id}").json()
    assert {k: job[k] for k in ("repository", "commit", "branch", "kind", "state", "summary")} == {
        "repository": "acme/kernels", "commit": sha_for("a"), "branch": "main", "kind": "run",
        "state": "queued", "summary": "queued by hand",
    }  # fmt: skip
    assert (job["required_labels"], job["attempt"], job["max_attempts"]) == ({}, 0, 3)
    assert (job["runner"], job["lease_expires_at"], job["failure"]) == (None, None, "")
    labelled_id = queue(admin, "b", branch="dev", labels={"gpu": "a100"})
    labelled = admin.get(f"/api/v1/jobs/{labelled_id}").json()
    assert (labelled["branch"], labelled["required_labels"]) == ("dev", {"gpu": "a100"})
    # Without labels, one job per label set of the repository (`kernelwatch repo runner-labels`).
    with Session(engine) as session, session.begin():
        runners.label_sets(session, "acme/kernels", None, [{"gpu": "h100"}, {"gpu": "a100"}])
    both = admin.post("/api/v1/jobs", json={"repository": "acme/kernels", "sha": sha_for("c")})
    assert both.json()["detail"] == "queued 2 job(s)"
    labels = [
        admin.get(f"/api/v1/jobs/{i}").json()["required_labels"] for i in both.json()["job_ids"]
    ]
    assert sorted(x["gpu"] for x in labels) == ["a100", "h100"]


def test_a_job_it_cannot_queue_is_refused_and_queues_nothing(
    server: LiveServer, admin: httpx.Client, engine: Engine
) -> None:
    good = {"repository": "acme/kernels", "sha": sha_for("a")}
    for body, says in [
        ({"sha": sha_for("a")}, "body.repository: Field required"),
        ({**good, "sha": "abc"}, "body.sha"),
        ({**good, "branch": "a..b"}, "not a valid git branch name"),
        ({**good, "clone_url": "--upload-pack=x"}, "body.clone_url"),
        ({**good, "clone_url": "ext::sh -c x"}, "clone URL 'ext::sh -c x' uses 'ext'"),
        ({**good, "labels": {f"k{i}": "v" for i in range(11)}}, "11 labels; at most 10"),
        ({**good, "priority": 1}, "body.priority"),
    ]:
        answer = admin.post("/api/v1/jobs", json=body)
        assert answer.status_code == 422, answer.text
        assert says in answer.json()["detail"], body
    for token in (None, "wrong-token", make_runner(engine, "gpu-1")):
        with server.client(token) as client:
            assert client.post("/api/v1/jobs", json=good).status_code == 401, token
    assert admin.get("/api/v1/jobs").json() == []


def test_jobs_are_listed_newest_first_and_filtered(
    admin: httpx.Client, runner: httpx.Client
) -> None:
    first, second = queue(admin, "a"), queue(admin, "b")
    other = queue(admin, "c", repository="acme/other")
    claim(runner)  # the oldest: `first`

    def ids(**query: object) -> list[int]:
        answer = admin.get("/api/v1/jobs", params=query)
        assert answer.status_code == 200, answer.text
        return [j["id"] for j in answer.json()]

    assert ids() == [other, second, first]
    assert ids(state="running") == [first] and ids(state="queued") == [other, second]
    assert ids(state="failed") == []
    assert ids(repository="acme/other") == [other]
    assert ids(commit=sha_for("b")[:4].upper()) == [second]
    assert ids(commit=sha_for("b")) == [second]
    assert ids(limit=2) == [other, second]
    for query, status, says in [
        ({"state": "done"}, 422, "query.state"),
        ({"commit": "abc"}, 422, "query.commit"),
        ({"commit": "b" * 41}, 422, "query.commit"),
        ({"repository": "acme/none"}, 404, "no repository 'acme/none'"),
        ({"limit": 0}, 422, "query.limit"),
        ({"branch": "main"}, 400, "unknown query parameter 'branch'"),
    ]:
        answer = admin.get("/api/v1/jobs", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query


def test_a_job_that_is_not_there_or_cannot_be(admin: httpx.Client) -> None:
    for path, status, says in [
        ("/api/v1/jobs/99", 404, "no job 99"),
        ("/api/v1/jobs/0", 422, "path.job_id"),
        (f"/api/v1/jobs/{MAX_ID + 1}", 422, "path.job_id"),
    ]:
        answer = admin.get(path)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], path
        cancel = admin.post(f"{path}/cancel")
        assert (cancel.status_code, says in cancel.json()["detail"]) == (status, True), path


def test_a_claim_takes_the_oldest_job_its_labels_allow_under_a_lease(
    admin: httpx.Client, runner: httpx.Client
) -> None:
    nothing = runner.post("/api/v1/jobs/claim")
    assert (nothing.status_code, nothing.content) == (204, b"")
    elsewhere = queue(admin, "a", labels={"gpu": "a100"})
    oldest, newer = queue(admin, "b"), queue(admin, "c", labels={"gpu": "h100"})
    answer = runner.post("/api/v1/jobs/claim")
    assert answer.status_code == 200, answer.text
    claimed = answer.json()
    job = claimed["job"]
    assert [job[k] for k in ("id", "state", "runner", "attempt")] == [oldest, "running", "gpu-1", 1]
    lease = when(job["lease_expires_at"]) - when(job["started_at"])
    assert lease == timedelta(seconds=600)  # KERNELWATCH_LEASE_SECONDS' default
    assert claimed["clone_url"] == CLONE_URL and claimed["attempt_token"].startswith("kwa_")
    (me,) = admin.get("/api/v1/runners").json()
    assert me["current_job_id"] == oldest
    assert claim(runner)[0]["id"] == newer
    # The a100 job is left for a runner that has that label.
    assert runner.post("/api/v1/jobs/claim").status_code == 204
    assert admin.get(f"/api/v1/jobs/{elsewhere}").json()["state"] == "queued"
    assert admin.post("/api/v1/jobs/claim").status_code == 401  # runners claim, admins do not


def test_a_lease_is_extended_by_its_own_attempt_only(
    server: LiveServer, admin: httpx.Client, runner: httpx.Client, engine: Engine
) -> None:
    queue(admin, "a")
    job, token = claim(runner)
    url = f"/api/v1/jobs/{job['id']}/lease"
    extended = runner.post(url, json={"attempt_token": token})
    assert extended.status_code == 200, extended.text
    assert when(extended.json()["lease_expires_at"]) > when(job["lease_expires_at"])
    with server.client(make_runner(engine, "gpu-2")) as other:
        stolen = other.post(url, json={"attempt_token": token})
    assert stolen.status_code == 409
    assert stolen.json()["detail"] == f"job {job['id']} is leased to another runner"
    for path, body, status, says in [
        (url, {"attempt_token": "kwa_other"}, 409, "that is not the current attempt"),
        ("/api/v1/jobs/99/lease", {"attempt_token": token}, 404, "no job 99"),
        (url, {}, 422, "body.attempt_token: Field required"),
        (url, {"attempt_token": token, "seconds": 60}, 422, "body.seconds"),
    ]:
        answer = runner.post(path, json=body)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], body
    assert admin.post(url, json={"attempt_token": token}).status_code == 401


def test_a_failed_attempt_fails_the_job_or_requeues_it_where_asked(
    admin: httpx.Client, runner: httpx.Client
) -> None:
    queue(admin, "a")
    job, token = claim(runner)
    log = "".join(f"line {i}\n" for i in range(4000)) + "no GPU"  # 38,896 characters
    retry = {"attempt_token": token, "log_tail": log, "retry": True}
    retried = runner.post(f"/api/v1/jobs/{job['id']}/fail", json=retry)
    assert retried.status_code == 200, retried.text
    # The job keeps the log's last 20,000 characters, where the failure shows.
    assert (retried.json()["state"], retried.json()["failure"]) == ("queued", log[-20_000:])
    assert (retried.json()["runner"], retried.json()["finished_at"]) == (None, None)
    again, token = claim(runner)
    assert (again["id"], again["attempt"]) == (job["id"], 2)
    failed = runner.post(f"/api/v1/jobs/{job['id']}/fail",
                         json={"attempt_token": token, "log_tail": "build failed"})  # fmt: skip
    assert (failed.json()["state"], failed.json()["failure"]) == ("failed", "build failed")
    assert failed.json()["finished_at"] is not None
    assert admin.get("/api/v1/runners").json()[0]["current_job_id"] is None
    gone = runner.post(f"/api/v1/jobs/{job['id']}/lease", json={"attempt_token": token})
    assert gone.status_code == 409
    assert gone.json()["detail"] == f"job {job['id']} is failed, not running: its lease is gone"


def test_a_released_job_goes_back_to_the_queue_unrun(
    admin: httpx.Client, runner: httpx.Client
) -> None:
    queue(admin, "a")
    job, token = claim(runner)
    released = runner.post(f"/api/v1/jobs/{job['id']}/release", json={"attempt_token": token})
    assert released.status_code == 200, released.text
    body = released.json()
    assert (body["state"], body["attempt"], body["runner"], body["lease_expires_at"]) == (
        "queued", 0, None, None
    )  # fmt: skip
    assert admin.get("/api/v1/runners").json()[0]["current_job_id"] is None
    twice = runner.post(f"/api/v1/jobs/{job['id']}/release", json={"attempt_token": token})
    assert twice.status_code == 409
    assert claim(runner)[0]["attempt"] == 1  # the released attempt did not count


def test_an_admin_cancels_a_queued_or_running_job_once(
    server: LiveServer, admin: httpx.Client, runner: httpx.Client
) -> None:
    queued, running = queue(admin, "a"), queue(admin, "b")
    admin.post(f"/api/v1/jobs/{queued}/cancel")  # so that the claim takes `running`
    job, token = claim(runner)
    assert job["id"] == running
    assert runner.post(f"/api/v1/jobs/{running}/cancel").status_code == 401
    cancelled = admin.post(f"/api/v1/jobs/{running}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert (body["state"], body["failure"]) == ("cancelled", "cancelled by an admin")
    assert body["finished_at"] is not None and body["lease_expires_at"] is None
    # The runner's attempt ends with it.
    lease = runner.post(f"/api/v1/jobs/{running}/lease", json={"attempt_token": token})
    assert lease.status_code == 409
    assert admin.get("/api/v1/runners").json()[0]["current_job_id"] is None
    again = admin.post(f"/api/v1/jobs/{queued}/cancel")
    assert again.status_code == 409
    assert again.json()["detail"] == f"job {queued} is already cancelled"


@pytest.mark.parametrize("char", ["x", "\x01", "\U0001f600"])
def test_the_runners_own_client_reports_any_failure_whatever_its_log(
    server: LiveServer, admin: httpx.Client, engine: Engine, char: str
) -> None:
    """A log of 70,000 characters that escape to 6 bytes each in JSON or take 4 in UTF-8: the
    runner's client cuts it to what the route's 64 KiB body takes (it was refused with a 413,
    and the job waited for its lease to run out)."""
    from runner.agent.client import ServiceClient

    queue(admin, "a")
    token = make_runner(engine, "gpu-9")
    with server.client(token) as raw:
        job, attempt = claim(raw)
    client = ServiceClient(server.url, token)
    try:
        failed = client.fail(job["id"], attempt, char * 70_000 + "no GPU")
    finally:
        client.close()
    assert failed["state"] == "failed" and failed["failure"].endswith(char * 100 + "no GPU")

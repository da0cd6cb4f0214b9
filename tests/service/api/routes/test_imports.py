"""The import route (service.api.routes.imports) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.api.app import create_app
from service.core.settings import Settings
from service.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

FIXTURES = Path(__file__).parents[2] / "runs" / "fixtures"
GBENCH = (FIXTURES / "gbench" / "saxpy_base.json").read_bytes()
NVBENCH = (FIXTURES / "nvbench" / "copy.json").read_bytes()
A, B = "a" * 40, "b" * 40
TARGET = {"repo": "acme/kernels", "commit": A, "committed_at": "2026-11-01T10:00:00Z"}


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def runs(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(Run)).scalar_one()


def test_a_google_benchmark_file_is_stored_as_a_run_of_the_commit(client: httpx.Client) -> None:
    query = {**TARGET, "branch": "release", "committed_at": "2026-11-01T12:00:00+02:00"}
    answer = client.post("/api/v1/imports/gbench", params=query, content=GBENCH)
    assert answer.status_code == 201, answer.text
    stored = answer.json()
    assert stored["run_id"].startswith("import-gbench-")
    assert (stored["stored"], stored["results"]) == (True, 4)  # a failed and a skipped: none
    assert stored["detail"] == f"imported 4 results as run {stored['run_id']}"
    run = client.get(f"/api/v1/runs/{stored['run_id']}").json()
    assert (run["repository"], run["commit"], run["branch"], run["suite"]) == (
        "acme/kernels", A, "release", "gbench:bench_saxpy"
    )  # fmt: skip
    metrics = client.get(f"/api/v1/commits/{A}/metrics").json()
    assert metrics["commit"]["committed_at"] == "2026-11-01T10:00:00Z"  # in UTC
    statuses = {(w["workload"], w["status"]) for w in metrics["workloads"]}
    assert {("BM_saxpy", "ok"), ("BM_fails", "failed"), ("BM_not_here", "skipped")} <= statuses


def test_the_same_file_again_is_200_and_changes_nothing(
    client: httpx.Client, engine: Engine
) -> None:
    first = client.post("/api/v1/imports/gbench", params=TARGET, content=GBENCH).json()
    again = client.post("/api/v1/imports/gbench", params=TARGET, content=GBENCH)
    assert again.status_code == 200, again.text
    assert again.json() == {
        "run_id": first["run_id"],
        "stored": False,
        "results": 4,
        "detail": f"this file was imported already as run {first['run_id']}; nothing changed",
    }
    assert runs(engine) == 1
    # The same file measured at another commit is another run; a sha in capitals is the same.
    other = client.post("/api/v1/imports/gbench", params={**TARGET, "commit": B.upper()},
                        content=GBENCH)  # fmt: skip
    assert other.status_code == 201 and other.json()["run_id"] != first["run_id"]
    assert client.get(f"/api/v1/runs/{other.json()['run_id']}").json()["commit"] == B
    assert runs(engine) == 2


def test_an_nvbench_file_is_stored_on_main_by_default(client: httpx.Client) -> None:
    answer = client.post("/api/v1/imports/nvbench", params=TARGET, content=NVBENCH)
    assert answer.status_code == 201, answer.text
    assert answer.json()["run_id"].startswith("import-nvbench-")
    run = client.get(f"/api/v1/runs/{answer.json()['run_id']}").json()
    assert (run["suite"], run["branch"], run["results"]) == ("nvbench:bench_copy", "main", 3)


def test_imports_it_cannot_take_are_refused_and_store_nothing(
    client: httpx.Client, engine: Engine
) -> None:
    for fmt, query, body, status, says in [
        ("csv", TARGET, GBENCH, 422, "path.format"),
        ("gbench", {**TARGET, "repo": None}, GBENCH, 422, "query.repo: Field required"),
        ("gbench", {**TARGET, "commit": None}, GBENCH, 422, "query.commit: Field required"),
        ("gbench", {**TARGET, "commit": A[:39]}, GBENCH, 422, "invalid import: commit"),
        ("gbench", {**TARGET, "commit": "g" * 40}, GBENCH, 422, "invalid import: commit"),
        ("gbench", {**TARGET, "repo": "a b"}, GBENCH, 422, "invalid import: repository"),
        ("gbench", {**TARGET, "branch": "a..b"}, GBENCH, 422, "not a valid git branch name"),
        ("gbench", {**TARGET, "committed_at": "soon"}, GBENCH, 422, "query.committed_at"),
        ("gbench", {**TARGET, "committed_at": "2026-11-01T10:00:00"}, GBENCH, 422, "timezone"),
        ("gbench", TARGET, b"", 422, "cannot import this gbench file: not Google Benchmark"),
        ("gbench", TARGET, NVBENCH, 422, "cannot import this gbench file: not Google Benchmark"),
        ("nvbench", TARGET, GBENCH, 422, "cannot import this nvbench file: benchmarks[0]"),
        ("gbench", {**TARGET, "sha": A}, GBENCH, 400, "unknown query parameter 'sha'"),
    ]:
        given = {k: v for k, v in query.items() if v is not None}
        answer = client.post(f"/api/v1/imports/{fmt}", params=given, content=body)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], (fmt, query)
    assert runs(engine) == 0


def test_imports_need_the_admin_token(server: LiveServer, engine: Engine) -> None:
    for token in (None, "wrong-token", make_runner(engine, "gpu-1")):
        with server.client(token) as client:
            answer = client.post("/api/v1/imports/gbench", params=TARGET, content=GBENCH)
        assert answer.status_code == 401, token
    assert runs(engine) == 0


def test_a_file_over_the_body_limit_is_413(settings: Settings, engine: Engine) -> None:
    settings.max_body_bytes = 4096
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as c:
        answer = c.post("/api/v1/imports/gbench", params=TARGET, content=GBENCH)
    assert answer.status_code == 413
    assert "4096-byte limit" in answer.json()["detail"]
    assert runs(engine) == 0

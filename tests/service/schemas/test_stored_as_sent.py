"""What would be stored other than it was sent, or fail the store, is refused at the door with a
422 naming the field (issue 49): a kernel named twice in a run's build, its ncu captures or its
timeline (stored as extra rows, or a 500 on the build's unique key), and a runner's environment
nested hundreds deep (a 500 in the JSON column's writer)."""

from __future__ import annotations

import copy
import json

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.models import BuildResource, Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer
from tests.service.histories.test_step_and_fix import new_runner


@pytest.fixture
def admin(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as client:
        yield client


def twice(doc: dict, where: str) -> dict:
    doc = copy.deepcopy(doc)
    workload = doc["workloads"][0]
    if where == "build.kernels":
        doc["build"]["kernels"] = [doc["build"]["kernels"][0]] * 2
    elif where == "ncu.kernels":
        workload["ncu"] = {"status": "ok", "kernels": [
            {"kernel": "k", "metrics": {}}, {"kernel": "k", "metrics": {}}]}  # fmt: skip
    else:
        workload["timeline"] = {"source": "cupti", "kernels": [
            {"kernel": "k", "calls": 1, "total_ns": 5.0, "share": 0.5}] * 2}  # fmt: skip
    return doc


@pytest.mark.parametrize("where", ["build.kernels", "ncu.kernels", "timeline"])
def test_a_kernel_named_twice_is_422_and_nothing_is_stored(
    admin: httpx.Client, engine: Engine, where: str
) -> None:
    doc = twice(document(commit="c1", medians={"k": 100.0}), where)
    answer = admin.post("/api/v1/runs", json=doc)
    assert answer.status_code == 422, answer.text
    assert "is named twice in" in answer.json()["detail"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0
        assert conn.execute(select(func.count()).select_from(BuildResource)).scalar_one() == 0


def test_a_runners_environment_nested_hundreds_deep_is_422(
    server: LiveServer, engine: Engine
) -> None:
    environment: dict = {}
    for _ in range(255):
        environment = {"x": environment}
    with server.client(new_runner(engine, "deep")) as runner:
        answer = runner.post("/api/v1/runners/register", json={"environment": environment})
        assert answer.status_code == 422, answer.text
        assert "nests deeper than" in answer.text
        fine = {"gpu": {"name": "H100", "clocks": {"sm": [1980]}}}
        assert runner.post("/api/v1/runners/register", json={"environment": fine}).is_success


@pytest.mark.parametrize(
    ("where", "value"),
    [("param", 2**80), ("param", -(2**63) - 1), ("environment", 2**70)],
)
def test_an_integer_beyond_64_bits_is_422_not_another_number(
    admin: httpx.Client, engine: Engine, where: str, value: int
) -> None:
    """JSON's integers have no bound; orjson read 2**80 as a float, and it was stored as
    1208925819614629200000000. Now refused, the field named."""
    doc = document(commit="c1", medians={"k": 100.0})
    if where == "param":
        doc["workloads"][0]["params"]["size"] = value
    else:
        doc["environment"]["extra"] = {"big": value}
    body = json.dumps(doc).encode()
    answer = admin.post("/api/v1/runs", content=body,
                        headers={"Content-Type": "application/json"})  # fmt: skip
    assert answer.status_code == 422, answer.text
    assert "an integer beyond 64 bits" in answer.json()["detail"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 0


def test_a_sample_that_underflows_to_zero_in_microseconds_is_422(admin: httpx.Client) -> None:
    doc = document(commit="c1", medians={"k": 100.0})
    timing = doc["workloads"][0]["timing"]
    timing["unit"] = "ns"
    timing["processes"][0]["samples"][0] = 5e-324
    answer = admin.post("/api/v1/runs", json=doc)
    assert answer.status_code == 422, answer.text
    assert "underflows to zero in microseconds" in answer.json()["detail"]


def test_a_runners_environment_holding_nan_is_422_not_null(
    server: LiveServer, engine: Engine
) -> None:
    with server.client(new_runner(engine, "nan")) as runner:
        answer = runner.post(
            "/api/v1/runners/register",
            content=b'{"environment": {"x": NaN}}',
            headers={"Content-Type": "application/json"},
        )
        assert answer.status_code == 422, answer.text
        assert "NaN and infinities" in answer.text

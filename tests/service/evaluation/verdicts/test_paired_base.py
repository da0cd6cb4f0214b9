"""A run's doubtful launches measured against its base within the run itself
(service.evaluation.verdicts.paired_base), through a real server on SQLite and PostgreSQL: each
series timed on both sides of the document's `paired_base` is judged at its ingest by the rule a
confirmation's samples pass and kept as one of the run's confirmations, with no job and against
the base commit it was timed with; a workload timed on one side only confirms nothing; and the
base's numbers are held to a stored run's limits, a refusal naming `paired_base`."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, select

from service.models import Commit, Confirmation, Series
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def head_with_base(head: dict[str, float], base: dict[str, float]) -> dict:
    """c1's run measuring `head`, its parent c0 timed beside it measuring `base`."""
    doc = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1, medians=head, seed=2)
    doc["paired_base"] = document(commit="c0", medians=base, seed=3)
    return doc


def confirmations(engine: Engine) -> dict[str, tuple]:
    """The stored confirmations by workload (its `act`): state, job, base commit, change."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(Series.params, Confirmation.state, Confirmation.job_id, Commit.sha,
                   Confirmation.change)
            .join(Series, Series.id == Confirmation.series_id)
            .join(Commit, Commit.id == Confirmation.base_commit_id)
        ).all()  # fmt: skip
    return {params["act"]: tuple(rest) for params, *rest in rows}


def test_each_series_timed_beside_its_base_is_judged_at_ingest(
    client: httpx.Client, engine: Engine
) -> None:
    base = {"slower": 100.0, "same": 200.0}
    assert client.post("/api/v1/runs", json=document(commit="c0", medians=base)).status_code == 201
    doc = head_with_base({"slower": 150.0, "same": 200.0, "head_only": 50.0},
                         {**base, "base_only": 80.0})  # fmt: skip
    assert client.post("/api/v1/runs", json=doc).status_code == 201
    found = confirmations(engine)
    # Timed on one side only, a workload has nothing to be judged against.
    assert set(found) == {"slower", "same"}
    state, job, base_sha, change = found["slower"]
    assert (state, job, base_sha) == ("confirmed", None, sha_for("c0"))
    assert change == pytest.approx(0.5, abs=0.01)
    assert found["same"][:3] == ("not_reproduced", None, sha_for("c0"))


def test_a_paired_base_beyond_a_stored_runs_limits_is_refused_by_name(
    client: httpx.Client, engine: Engine
) -> None:
    assert client.post("/api/v1/runs", json=document(commit="c0")).status_code == 201
    doc = head_with_base({"k": 150.0}, {"k": 100.0})
    timing = doc["paired_base"]["workloads"][0]["timing"]
    timing["unit"] = "ns"
    timing["processes"][0]["samples"][0] = 5e-324
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"] == (
        "invalid document: paired_base.workloads[0].timing.processes: a sample in ns underflows "
        "to zero in microseconds"
    )
    assert confirmations(engine) == {}

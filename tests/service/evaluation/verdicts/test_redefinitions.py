"""The workloads a run redefined in place (service.evaluation.verdicts.redefinitions), on runs
stored through a real server on SQLite and PostgreSQL: a series the run started pairs with the
series the previous run measured and this one retired, where the workload, its kernels and its
work are the same; nothing pairs without a previous run, with another amount of work, or where
the run still holds a workload of the old parameters (a broken one is broken, not redefined);
and the redefinition described as "old → new"."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.verdicts.redefinitions import describe, redefined
from service.models import Result, Run, Series
from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, line: list[str], *launches: dict[str, Any]) -> None:
    """A run of `reduce` at each of `launches` (its params, and optionally its flops or a
    failure), the same kernel doing the same work unless told otherwise."""
    doc = document(commit=label, parents=line[:1], ancestors=line, minutes=len(line),
                   medians=dict.fromkeys(range(len(launches)), 100.0))  # fmt: skip
    for w, launch in zip(doc["workloads"], launches, strict=True):
        w.update(name="reduce", params=launch["params"], kernels=["reduce_kernel"],
                 flops=launch.get("flops", 1e6))  # fmt: skip
        w["timing"]["kernel"] = "reduce_kernel"
        if launch.get("failed"):
            w.update(status="failed", error="illegal memory access", timing=None)
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def pairs(session: Session) -> dict[str, str]:
    """What the newest run redefined, against the run before it, by parameters."""
    previous, head = session.scalars(select(Run.id).order_by(Run.id.desc()).limit(2)).all()[::-1]
    series = {s.id: s for s in session.scalars(select(Series))}
    measured = set(session.scalars(select(Result.series_id).where(Result.run_id == head)))
    earlier = set(session.scalars(select(Result.series_id).where(Result.run_id != head)))
    found = redefined(session, head, previous, measured - earlier, measured)
    assert redefined(session, head, None, measured - earlier, measured) == {}
    return {str(series[new].params): str(old.params) for new, old in found.items()}


def test_a_workload_launched_otherwise_on_the_same_work_takes_over_its_series(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, "c0", [], {"params": {"blocks": 1056}}, {"params": {"blocks": 8}})
    post(client, "c1", ["c0"], {"params": {"blocks": 132}}, {"params": {"blocks": 8}})
    with Session(engine) as session:
        assert pairs(session) == {"{'blocks': 132}": "{'blocks': 1056}"}
        old, new = session.scalars(select(Series).order_by(Series.id)).all()[0::2]
        assert describe(old, new) == "reduce blocks=1056 → reduce blocks=132"


def test_other_work_or_a_workload_still_there_is_no_redefinition(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, "c0", [], {"params": {"blocks": 1056}})
    post(client, "c1", ["c0"], {"params": {"blocks": 132}, "flops": 2e6})
    with Session(engine) as session:
        assert pairs(session) == {}
    # The old parameters failed in this run: that series is broken, the new one starts afresh.
    post(client, "c2", ["c1", "c0"], {"params": {"blocks": 1056}})
    post(client, "c3", ["c2", "c1", "c0"], {"params": {"blocks": 66}},
         {"params": {"blocks": 1056}, "failed": True})  # fmt: skip
    with Session(engine) as session:
        assert pairs(session) == {}

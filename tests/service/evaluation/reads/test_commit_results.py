"""A commit's results as its metrics answer shows them (service.evaluation.reads.commit_results),
on runs stored through a real server on SQLite and PostgreSQL: a judged result shows the change
its verdict judged, against the verdict's baseline median and results, with the segment it was
compared with; one whose analysis is pending, its change from the nearest earlier result alone;
and a change point whose first commit is this one, on the result of its series."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.reads.commit_results import result_metrics
from service.models import Commit, Run
from service.store.reads import commit_reads as reads
from tests.conftest import ADMIN_TOKEN
from tests.dashboards.conftest import post_rich_history
from tests.documents import post_history, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def metrics(engine: Engine, sha: str, judged: bool = True) -> dict[str, dict[str, Any]]:
    """The commit's results by kernel, as judged or as while its analysis was pending."""
    with Session(engine) as session:
        commit = session.scalars(select(Commit).where(Commit.sha == sha)).one()
        run_ids = list(session.scalars(select(Run.id).where(Run.commit_id == commit.id)))
        verdicts = reads.verdicts(session, run_ids) if judged else []
        found = result_metrics(session, commit, "main", run_ids, verdicts)
    return {kernel: metric for rows in found.values() for kernel, metric in rows}


def test_a_judged_result_shows_the_change_and_baseline_its_verdict_judged(
    client: httpx.Client, engine: Engine
) -> None:
    labels = post_history(client, 4, {"k": 100.0})
    judged = metrics(engine, sha_for(labels[-1]))["k"]
    analysis = judged["analysis"]
    assert judged["verdict"] == analysis["verdict"] == "unchanged"
    assert judged["change"] == analysis["change"]
    assert judged["baseline"]["median"] == analysis["baseline_median"]
    assert judged["baseline"]["results"] == analysis["baseline_results"] == 3
    assert judged["baseline"]["commit"] == sha_for(labels[-2])
    segment = analysis["segment"]
    assert (segment["start_commit"], segment["kind"], segment["results"]) == (
        sha_for(labels[0]), "history", 3)  # fmt: skip
    assert analysis["run_offset"] is None  # no control measured one


def test_a_result_pending_analysis_shows_its_change_from_the_nearest_earlier(
    client: httpx.Client, engine: Engine
) -> None:
    labels = post_history(client, 4, {"k": 100.0})
    pending = metrics(engine, sha_for(labels[-1]), judged=False)["k"]
    nearest = metrics(engine, sha_for(labels[-2]))["k"]["statistics"]["median"]
    assert (pending["verdict"], pending["analysis"]) == (None, None)
    assert pending["baseline"]["results"] == 1 and pending["baseline"]["median"] == nearest
    median = pending["statistics"]["median"]
    assert pending["change"] == pytest.approx((median - nearest) / nearest)


def test_a_change_point_starting_at_the_commit_is_on_its_series_result(
    client: httpx.Client, engine: Engine
) -> None:
    history = post_rich_history(client, runs=10, regressed_at=7)
    step = metrics(engine, history.sha(7))["train_step"]["change_point"]
    assert step["commit"] == history.sha(7) and step["bisected_to"] is None
    assert step["change"] == pytest.approx(0.12, abs=0.01)
    assert step["after_median"] > step["before_median"]
    assert metrics(engine, history.sha(8))["train_step"]["change_point"] is None

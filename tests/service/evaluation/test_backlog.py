"""The analysis backlog: runs stored, then analysed (verdicts, alerts, change points) after the
POST answers, exactly once, by any process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import delete, select

from service.core.db import session_factory
from service.core.settings import Settings
from service.evaluation.backlog import process_pending
from service.models import ChangePoint, Run, Verdict
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, post_history, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.verdicts.test_changepoints import change_points, post_line

STEP = [{"step": 100.0, "flat": 50.0}] * 12 + [{"step": 110.0, "flat": 50.0}] * 6


@pytest.fixture
def idle_settings(settings: Settings) -> Settings:
    """A service whose change-point worker never runs: the test works the backlog itself."""
    return settings.model_copy(update={"analysis_poll_seconds": 0})


@pytest.fixture
def client(idle_settings: Settings) -> Iterator[httpx.Client]:
    from service.api.app import create_app

    with (
        LiveServer(create_app(idle_settings, migrate=False)) as live,
        live.client(ADMIN_TOKEN) as c,
    ):
        yield c


def test_stored_runs_wait_and_the_reads_say_so(client: httpx.Client) -> None:
    post_line(client, STEP)
    series = client.get("/api/v1/series", params={"kernel": "step"}).json()
    assert series["change_points_pending"] is True
    assert series["change_points"] == []
    metrics = client.get(f"/api/v1/commits/{sha_for('c17')}/metrics").json()
    assert metrics["change_points_pending"] is True


def test_a_burst_is_resegmented_once_and_matches_one_run_at_a_time(
    client: httpx.Client, idle_settings: Settings, engine
) -> None:
    post_line(client, STEP)
    factory = session_factory(engine)
    assert process_pending(factory).segmented == len(STEP)
    assert process_pending(factory).segmented == 0
    (cp,) = change_points(client, "step")  # the same shift the per-run path finds
    assert cp["commit"] == sha_for("c12")
    assert cp["change"] == pytest.approx(0.10, abs=0.003)
    assert change_points(client, "flat") == []
    with factory() as session:
        assert session.scalars(select(Run).where(Run.change_points_at.is_(None))).all() == []


def test_concurrent_workers_take_each_run_once(
    client: httpx.Client, idle_settings: Settings, engine
) -> None:
    post_line(client, STEP)
    factory = session_factory(engine)
    counts: list[int] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            counts.append(process_pending(factory).segmented)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(counts) == len(STEP)
    with factory() as session:
        rows = session.scalars(select(ChangePoint)).all()
    assert [(r.commit_id, r.branch) for r in rows if r.change > 0.05] != []
    assert len({(r.series_id, r.branch, r.commit_id) for r in rows}) == len(rows)


def _deferred(settings: Settings, **update: object) -> Settings:
    return settings.model_copy(update={"analyse_in_request": False, **update})


def _post_regression(client: httpx.Client) -> None:
    labels = post_history(client, 8, {"k": 100.0})
    slower = document(
        commit="c8", parents=labels[-1:], ancestors=labels[::-1], minutes=8, medians={"k": 110.0}
    )
    assert client.post("/api/v1/runs", json=slower).status_code == 201


def _verdict(metrics: dict) -> str | None:
    return metrics["workloads"][0]["kernels"][0]["metrics"][0]["verdict"]


def test_by_default_verdicts_follow_the_answer(settings: Settings, engine) -> None:
    from service.api.app import create_app

    idle = _deferred(settings, analysis_poll_seconds=0)
    live = LiveServer(create_app(idle, migrate=False))
    with live, live.client(ADMIN_TOKEN) as client:
        _post_regression(client)
        metrics = client.get(f"/api/v1/commits/{sha_for('c8')}/metrics").json()
        assert metrics["analysis_pending"] is True
        assert _verdict(metrics) is None
        assert client.get("/api/v1/alerts").json() == []
        worked = process_pending(session_factory(engine))
        assert len(worked.analysed) == 9
        assert process_pending(session_factory(engine)).analysed == []
        metrics = client.get(f"/api/v1/commits/{sha_for('c8')}/metrics").json()
        assert metrics["analysis_pending"] is False
        assert _verdict(metrics) == "regressed"
        (alert,) = client.get("/api/v1/alerts").json()
        assert alert["state"] == "suspected"


def test_the_app_works_the_backlog_off_by_itself(settings: Settings) -> None:
    from service.api.app import create_app

    live_settings = _deferred(settings, analysis_delay_seconds=0.2)
    live = LiveServer(create_app(live_settings, migrate=False))
    with live, live.client(ADMIN_TOKEN) as client:
        _post_regression(client)
        deadline = time.monotonic() + 20
        while True:
            metrics = client.get(f"/api/v1/commits/{sha_for('c8')}/metrics").json()
            if not (metrics["analysis_pending"] or metrics["change_points_pending"]):
                break
            assert time.monotonic() < deadline, "the backlog was not worked off in 20 s"
            time.sleep(0.05)
        assert _verdict(metrics) == "regressed"


def test_a_baseline_reads_the_same_with_and_without_its_verdict(
    client: httpx.Client, engine
) -> None:
    """With a verdict, a result's baseline is the nearest of the verdict's baseline results (read
    without walking the ancestry); while its run waits for analysis, the nearest earlier result
    along the ancestry: the same commit, run and median, the later run of a commit measured
    twice winning in both."""
    post_line(client, [{"k": 100.0, "j": 40.0}, {"k": 104.0, "j": 41.0}])
    again = document(commit="c1", parents=["c0"], ancestors=["c0"], minutes=1,
                     medians={"k": 103.0, "j": 40.5}, seed=7)  # fmt: skip
    head = document(commit="c2", parents=["c1"], ancestors=["c1", "c0"], minutes=2,
                    medians={"k": 130.0, "j": 40.0}, seed=2)  # fmt: skip
    for doc in (again, head):
        answer = client.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text

    def baselines() -> tuple[bool, dict[str, dict]]:
        body = client.get(f"/api/v1/commits/{sha_for('c2')}/metrics").json()
        by_kernel = {k["kernel"]: m for w in body["workloads"] for k in w["kernels"]
                     for m in k["metrics"]}  # fmt: skip
        return body["analysis_pending"], {k: m["baseline"] for k, m in by_kernel.items()}

    pending, judged = baselines()
    assert pending is False
    with session_factory(engine)() as session:  # the run as it was before its analysis
        run = session.scalars(select(Run).where(Run.run_uuid == head["run_id"])).one()
        session.execute(delete(Verdict).where(Verdict.run_id == run.id))
        run.analysed_at = None
        session.commit()
    pending, walked = baselines()
    assert pending is True
    for kernel in ("k", "j"):
        assert judged[kernel]["commit"] == walked[kernel]["commit"] == sha_for("c1")
        assert judged[kernel]["run_id"] == walked[kernel]["run_id"] == again["run_id"]
    assert walked["k"]["median"] == pytest.approx(103.0, rel=0.02)


def test_a_request_whose_run_another_process_took_still_answers_decided(
    settings: Settings, engine
) -> None:
    """analyse_in_request's promise when the worker claimed the run first: the request does not
    answer while runs its arrival set waiting are undecided (the worker's follow-ups of the run
    it took, here the nine stored and left waiting)."""
    from service.api.app import create_app
    from service.evaluation import backlog

    idle = _deferred(settings, analysis_poll_seconds=0)
    live = LiveServer(create_app(idle, migrate=False))
    with live, live.client(ADMIN_TOKEN) as client:
        _post_regression(client)
    factory = session_factory(engine)
    with factory() as session:
        first = session.scalars(select(Run.id).order_by(Run.id).limit(1)).one()
    assert backlog._analyse(factory, first) is not None  # the worker took the first run
    assert backlog.analyse_run(factory, first) == []  # the request finds it taken
    with factory() as session:  # and still leaves nothing undecided behind it
        assert session.scalars(select(Run.id).where(Run.analysed_at.is_(None))).all() == []

"""The baseline of a series at a commit (service.evaluation.verdicts.baseline), read from a
history stored through a real server on SQLite and PostgreSQL: the newest segment of its
ancestors' results, nearest first, its K nearest results' samples to test against and every
result's median read beside them; a regression found at an ancestor starts a new level, which a
person's triage of its alert overrides (acknowledged: the regressed level accepted, saying by
whom; invalid: the shift withdrawn)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.verdicts.baseline import Baseline, K, baselines
from service.models import Commit, Series
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import confirmed, regressed_history


@pytest.fixture
def admin(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def baseline(engine: Engine, labels: list[str], k: int = K) -> tuple[Baseline, dict[int, str]]:
    """The slowed series' baseline along `labels` (nearest first), and commit id -> label."""
    with Session(engine) as session:
        ids = dict(session.execute(select(Commit.sha, Commit.id)).all())
        line = [ids[sha_for(label)] for label in labels]
        (sid,) = session.scalars(
            select(Series.id).where(
                Series.kernel == "gemm_bias_act_fwd", Series.metric == "duration"
            )
        ).all()
        found = baselines(session, [sid], line, k=k)[sid]
    return found, {ids[sha_for(label)]: label for label in labels}


def test_a_line_without_a_shift_is_one_segment_its_nearest_k_tested_against(
    admin: httpx.Client, engine: Engine
) -> None:
    labels = regressed_history(admin)[::-1]  # c7 .. c0, nearest first
    found, label = baseline(engine, labels, k=3)
    assert (found.segment.kind, found.segment.length) == ("history", 8)
    assert [label[r.commit_id] for r in found.results] == ["c7", "c6", "c5"]
    assert all(len(r.samples) == sum(r.process_counts) > 0 for r in found.results)
    # The noise and the wander are read from the whole segment and every result, not just K.
    assert len(found.segment_medians) == len(found.history) == len(found.history_runs) == 8
    assert label[found.start_commit_id] == "c0"


def test_a_regression_starts_a_level_a_persons_triage_overrides(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    line = ["head", *regressed_history(admin)[::-1]]
    found, label = baseline(engine, line)
    assert (found.segment.kind, label[found.start_commit_id]) == ("regression", "head")
    assert len(found.results) == len(found.segment_medians) == 1 and len(found.history) == 9
    alert = confirmed(server, engine, admin)
    triage = {"state": "acknowledged", "actor": "ada"}
    assert admin.patch(f"/api/v1/alerts/{alert['id']}", json=triage).status_code == 200
    found, label = baseline(engine, line)
    assert (found.segment.kind, label[found.start_commit_id]) == ("acknowledged", "head")
    assert found.segment.note == f"alert {alert['id']} acknowledged by ada"
    triage = {"state": "invalid", "actor": "ada"}
    assert admin.patch(f"/api/v1/alerts/{alert['id']}", json=triage).status_code == 200
    found, _ = baseline(engine, line)
    # Withdrawn: nothing at the head bounds the level, so the head's result joins the line's.
    assert (found.segment.kind, found.segment.length) == ("history", 9)

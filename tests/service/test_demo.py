"""`kernelwatch demo`: the bundled H200 history loads through the real ingest and analysis."""

from __future__ import annotations

import gzip
import html
import json
import shutil
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from dashboards import DEMO_DIR
from service.core.db import create_db_engine
from service.core.settings import Settings
from service.demo import DemoError, demo_settings, load_demo
from service.models import Alert, Commit, Run, Runner, Verdict
from tests.e2e import demo_process

MANIFEST = json.loads((DEMO_DIR / "manifest.json").read_text())
REGRESSION, FIX, OPEN, BROKEN = (
    next(e["commit"] for e in MANIFEST["runs"] if e["note"].startswith(word))
    for word in ("THE REGRESSION", "THE FIX", "THE PUSH'S HEAD", "A CORRECTNESS FAILURE")
)


def test_the_history_loads_with_its_regression_confirmed_and_fixed(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert load_demo(settings, log=lambda _: None) == len(MANIFEST["runs"])
    engine = create_db_engine(demo_settings(settings).effective_database_url)
    with Session(engine) as session:
        runs = session.scalars(select(Run)).all()
        assert len(runs) == sum(e["kind"] == "run" for e in MANIFEST["runs"])
        assert all(r.analysed_at and r.change_points_at for r in runs)
        sha = {c.id: c.sha for c in session.scalars(select(Commit))}
        alerts = session.scalars(select(Alert).order_by(Alert.id)).all()
        alert, *still_open = alerts
        # The second regression, left open: the GEMM and the training step that runs it, both
        # confirmed, both named for the split-K epilogue's uncoalesced loads.
        assert [(a.state, sha[a.commit_id]) for a in still_open] == [("open", OPEN)] * 2
        # found at the head of a push of three commits, bisected to the one that did it
        # the bisection's last test: the bad one
        culprit = [e for e in MANIFEST["runs"] if e["kind"] == "bisect"][-1]["commit"]
        assert all(a.bisect["state"] == "done" for a in still_open)
        assert all(sha[a.first_bad_commit_id] == culprit != OPEN for a in still_open)
        assert all("gemm_splitk_epilogue" in a.summary and "uncoalesced" in a.summary
                   for a in still_open)  # fmt: skip
        assert sha[alert.commit_id] == REGRESSION
        assert alert.state == "fixed" and sha[alert.fixed_by_commit_id] == FIX
        assert alert.confirmed_change > 0.3  # the recorded interleaved A B A B run
        assert "bank conflicts" in alert.summary
        at_regression = session.scalars(
            select(Verdict.verdict)
            .join(Run, Run.id == Verdict.run_id)
            .where(Run.commit_id == alert.commit_id, Verdict.series_id == alert.series_id)
        ).one()
        assert at_regression == "regressed"
        # The demo's runner shows the GPU the recording ran on and when it last posted.
        (runner,) = session.scalars(select(Runner)).all()
        assert runner.environment["gpu"]["name"].startswith("NVIDIA")
        assert runner.last_seen_at is not None
    engine.dispose()
    # Loading again rebuilds the demo database instead of adding to it.
    assert load_demo(settings, log=lambda _: None) == len(MANIFEST["runs"])


def test_a_broken_bundle_is_a_clear_error(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(DEMO_DIR, bundle)
    first = MANIFEST["runs"][0]["file"]
    (bundle / first).write_bytes(gzip.compress(b"{not json"))
    with pytest.raises(DemoError, match=first):
        load_demo(Settings(data_dir=tmp_path), bundle=bundle, log=lambda _: None)
    (bundle / "manifest.json").unlink()
    with pytest.raises(DemoError, match="manifest"):
        load_demo(Settings(data_dir=tmp_path), bundle=bundle, log=lambda _: None)


def test_kernelwatch_demo_serves_the_pages(tmp_path: Path) -> None:
    with demo_process(tmp_path) as url:
        alerts = httpx.get(f"{url}/api/v1/alerts?state=open&state=fixed").json()
        assert sorted(a["state"] for a in alerts) == ["fixed", "open", "open"]
        fixed = next(a for a in alerts if a["state"] == "fixed")
        page = httpx.get(f"{url}/alerts?state=fixed")
        assert page.status_code == 200 and "transpose" in page.text
        # The first look shows what needs attention: the open regression, with its cause.
        first = httpx.get(f"{url}/alerts").text
        assert "gemm_fwd" in first and "uncoalesced" in first and "transpose" not in first
        # Its two alerts are one change: one kernel's one cause, at the commit bisection named.
        (group,) = httpx.get(f"{url}/api/v1/alerts/groups?state=open").json()
        culprit = [e for e in MANIFEST["runs"] if e["kind"] == "bisect"][-1]["commit"]
        assert group["key"]["commit"] == culprit and len(group["alert_ids"]) == 2
        assert group["headline"].startswith(
            "gemm_splitk_epilogue: uncoalesced global access — slowed gemm_fwd +"
        )
        assert ", train_step +" in group["headline"] and group["headline"] in html.unescape(first)
        # The commits link the alert they opened and the one they fixed.
        for sha, role in ((REGRESSION, "opened here"), (FIX, "fixed here")):
            (linked,) = httpx.get(f"{url}/commits/{sha}.json").json()["alerts"]
            assert linked["id"] == fixed["id"] and linked["role"] == role
        # The commit whose dropout failed correctness says so.
        broken = httpx.get(f"{url}/commits/{BROKEN}.json").json()
        (dropout,) = [w for w in broken["workloads"] if w["workload"] == "dropout"]
        assert dropout["status"] == "correctness_failed"
        assert not (tmp_path / "kernelwatch.db").exists()  # the real database is untouched
    assert "documents loaded" in (tmp_path / "demo.log").read_text()

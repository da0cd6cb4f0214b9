"""`kernelwatch demo`: the bundled H100 history loads through the real ingest and analysis."""

from __future__ import annotations

import gzip
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
from service.models import Alert, Commit, Run, Verdict
from tests.e2e import demo_process

MANIFEST = json.loads((DEMO_DIR / "manifest.json").read_text())
REGRESSION, FIX = (
    next(e["commit"] for e in MANIFEST["runs"] if e["note"].startswith(word))
    for word in ("THE REGRESSION", "THE FIX")
)


def test_the_history_loads_with_its_regression_confirmed_and_fixed(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert load_demo(settings, log=lambda _: None) == len(MANIFEST["runs"])
    engine = create_db_engine(demo_settings(settings).effective_database_url)
    with Session(engine) as session:
        runs = session.scalars(select(Run)).all()
        assert len(runs) == sum(e["kind"] == "run" for e in MANIFEST["runs"])
        assert all(r.analysed_at and r.change_points_at for r in runs)
        (alert,) = session.scalars(select(Alert)).all()
        sha = {c.id: c.sha for c in session.scalars(select(Commit))}
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
        alerts = httpx.get(f"{url}/api/v1/alerts").json()
        assert [a["state"] for a in alerts] == ["fixed"]
        page = httpx.get(f"{url}/alerts?state=fixed")
        assert page.status_code == 200 and "transpose" in page.text
        # The commits link the alert they opened and the one they fixed.
        for sha, role in ((REGRESSION, "opened here"), (FIX, "fixed here")):
            (linked,) = httpx.get(f"{url}/commits/{sha}.json").json()["alerts"]
            assert linked["id"] == alerts[0]["id"] and linked["role"] == role
        assert not (tmp_path / "kernelwatch.db").exists()  # the real database is untouched
    assert "documents loaded" in (tmp_path / "demo.log").read_text()

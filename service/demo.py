"""`kernelwatch demo`: a history the real runner recorded on an H200, loaded and served at once.

The bundle (dashboards/demo_history/, its manifest says how it was recorded) holds result
documents in commit order, one of them a confirmation run. They go through the same path as a
runner's posts: each run is stored and analysed, so its verdicts, the suspected alert and the
confirmation job it queues are the service's own; the recorded confirmation is then posted under
that job's lease by a demo runner, which opens the alert. The demo database is its own SQLite
file under the data directory, rebuilt on every start; the real one is never touched.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from dashboards import DEMO_DIR
from service.core.db import create_db_engine
from service.core.migrate import upgrade
from service.core.settings import Settings
from service.evaluation.backlog import process_pending
from service.models import Repository
from service.runs.runner_results import store_runner_document
from service.schemas.document import RunDocument
from service.store.history.ingest import ingest
from service.store.jobs import queue, runners
from service.store.jobs.queue import claim
from service.store.reads import queries

DEMO_RUNNER = "demo-gpu"


class DemoError(Exception):
    """The bundle is missing or does not load; the message says which file and why."""


def demo_settings(settings: Settings) -> Settings:
    """The settings of the demo service: its own database under the data directory."""
    path = (settings.data_dir / "demo" / "kernelwatch.db").resolve()
    return settings.model_copy(update={"database_url": f"sqlite:///{path}"})


def load_demo(
    settings: Settings, bundle: Path = DEMO_DIR, log: Callable[[str], None] = print
) -> int:
    """Rebuild the demo database from the bundle; the number of documents loaded."""
    manifest = _manifest(bundle)
    path = Path(demo_settings(settings).effective_database_url.removeprefix("sqlite:///"))
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    engine = create_db_engine(f"sqlite:///{path}")
    try:
        upgrade(engine)
        factory = sessionmaker(engine, expire_on_commit=False)
        for entry in manifest["runs"]:
            raw = _document(bundle, entry)
            if entry["kind"] in ("confirm", "bisect"):
                _answer(factory, raw, entry["kind"], entry["commit"])
            else:
                if entry.get("push_commits"):
                    raw = {**raw, "job_id": _push_job(factory, entry)}
                ingest(factory, RunDocument.model_validate(raw), raw)
            process_pending(factory)
            log(f"  {entry['commit'][:12]} {entry['kind']:8} {entry.get('note', '')[:90]}")
    finally:
        engine.dispose()
    return len(manifest["runs"])


def _manifest(bundle: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((bundle / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise DemoError(f"the demo bundle's manifest does not load: {exc}") from exc
    if not manifest.get("runs"):
        raise DemoError(f"{bundle / 'manifest.json'} lists no runs")
    return manifest


def _document(bundle: Path, entry: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(gzip.decompress((bundle / entry["file"]).read_bytes()))
    except (OSError, ValueError, KeyError) as exc:
        raise DemoError(f"demo document {entry.get('file')!r} does not load: {exc}") from exc


def _push_job(factory: sessionmaker[Session], entry: dict[str, Any]) -> int:
    """The finished run job of a push of several commits whose head `entry` is: a regression
    found at the head is bisected over them (service.evaluation.alerts.bisect reads the job's
    payload)."""
    with factory() as session, session.begin():
        return queue.finished_push_head(
            session, _repository(session).id, entry["commit"], list(entry["push_commits"])
        )


def _repository(session: Session) -> Repository:
    repository = queries.first_repository(session)
    if repository is None:
        raise DemoError("the bundle's push comes before any run of its repository")
    return repository


def _answer(factory: sessionmaker[Session], raw: dict[str, Any], kind: str, commit: str) -> None:
    """Post a recorded confirmation or bisect document as the demo runner, under the lease of
    each job of that kind and commit the service queued (a bisection queues one per alert)."""
    with factory() as session:
        waiting = queries.queued_jobs(session, kind, commit)
    if not waiting:
        raise DemoError(f"the bundle's {kind} of {commit[:12]} finds no job to answer")
    for _ in range(waiting):
        with factory() as session, session.begin():
            # What the recording's runner reported: its GPU, and a post just now.
            runner = runners.demo_runner(session, DEMO_RUNNER, raw.get("environment") or {})
            claimed = claim(session, runner, lease_seconds=600)
            if claimed is None or claimed.job.kind != kind or claimed.job.commit_sha != commit:
                raise DemoError(f"the bundle's {kind} of {commit[:12]} was not the next job")
            answer = {**raw, "job_id": claimed.job.id, "lease_token": claimed.attempt_token}
            runner_id = runner.id
        store_runner_document(factory, RunDocument.model_validate(answer), answer, runner_id)

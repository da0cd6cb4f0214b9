"""The Prometheus exposition of service/core/telemetry.py: this process's counters in the text
format, each label of the ingest outcome shown before the first run arrives, no *_created
series, another registry's metrics after the counters; and with PROMETHEUS_MULTIPROC_DIR set
(several server workers), a scrape reads the workers' files and sums their counts rather than
reporting the scraped process alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.parser import text_string_to_metric_families

from service.core.telemetry import JOBS_CLAIMED, MULTIPROC_ENV, RUNS_INGESTED, exposition

ROOT = Path(__file__).resolve().parents[3]

# A server worker: counts with the multiprocess files (the env is set before the import).
WORKER = """
from service.core.telemetry import JOBS_CLAIMED, RUNS_INGESTED
RUNS_INGESTED.labels("stored").inc({stored})
JOBS_CLAIMED.inc({claimed})
"""


def samples(text: bytes) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


@pytest.fixture
def single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)


@pytest.mark.usefixtures("single_process")
def test_both_ingest_outcomes_are_shown_before_any_run() -> None:
    shown = samples(exposition())
    for outcome in ("stored", "duplicate"):
        assert ("kernelwatch_runs_ingested_total", (("outcome", outcome),)) in shown


@pytest.mark.usefixtures("single_process")
def test_a_counted_event_shows_in_the_next_scrape() -> None:
    key = ("kernelwatch_jobs_claimed_total", ())
    before = samples(exposition())[key]
    JOBS_CLAIMED.inc()
    assert samples(exposition())[key] == before + 1


@pytest.mark.usefixtures("single_process")
def test_no_created_series_is_exposed() -> None:
    # A restart shows in process_start_time_seconds; *_created would double every series.
    assert b"_created" not in exposition()


@pytest.mark.usefixtures("single_process")
def test_another_registrys_metrics_follow_the_counters() -> None:
    extra = CollectorRegistry()
    Gauge("kernelwatch_queue_depth", "Jobs queued", registry=extra).set(7)
    text = exposition(extra)
    assert text.index(b"kernelwatch_runs_ingested_total") < text.index(b"kernelwatch_queue_depth")
    assert samples(text)[("kernelwatch_queue_depth", ())] == 7


def test_with_several_workers_a_scrape_sums_their_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER.format(stored=stored, claimed=claimed)], cwd=ROOT, env=env
        )
        for stored, claimed in ((2, 1), (3, 4))
    ]
    assert [w.wait(timeout=30) for w in workers] == [0, 0]
    # This process's own counts live in its registry, not in the files: the scrape ignores them.
    RUNS_INGESTED.labels("stored").inc(100)
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    shown = samples(exposition())
    assert shown[("kernelwatch_runs_ingested_total", (("outcome", "stored"),))] == 5
    assert shown[("kernelwatch_jobs_claimed_total", ())] == 5

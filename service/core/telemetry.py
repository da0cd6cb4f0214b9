"""Prometheus metrics of this process: what happened (counters, latencies) and how to expose it.

Events are counted where they happen: runs ingested and the ingest's seconds (the runs route),
jobs claimed, attempts failed and leases expired (the queue), HTTP requests by route template,
method and status (service.api.http_metrics). What the database holds (queue depth, the
analysis backlog, open alerts, runners' last heartbeats) is read at scrape time instead
(service.store.reads.telemetry), so every process and replica tells the same. Served with several
worker processes (`kernelwatch serve --workers N`), the counters go through prometheus-client's
multiprocess mode ($PROMETHEUS_MULTIPROC_DIR, which the server sets before its workers start)
and a scrape of any worker sums all of them.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
disable_created_metrics()  # no *_created series: a restart shows in process_start_time_seconds
CONTENT_TYPE = CONTENT_TYPE_LATEST

RUNS_INGESTED = Counter(
    "kernelwatch_runs_ingested",
    "Result documents posted and accepted, by outcome (stored, or a duplicate already stored)",
    ["outcome"],
)
for _outcome in ("stored", "duplicate"):  # shown at 0 before the first, as Prometheus advises
    RUNS_INGESTED.labels(_outcome)
INGEST_SECONDS = Histogram(
    "kernelwatch_ingest_seconds",
    "Seconds from a result document's arrival to its answer (validation and storage, and the "
    "verdicts where the service judges in the request)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
JOBS_CLAIMED = Counter("kernelwatch_jobs_claimed", "Jobs handed to a runner under a lease")
JOBS_FAILED = Counter(
    "kernelwatch_jobs_failed", "Attempts that a runner reported failed (retried or final)"
)
JOBS_EXPIRED = Counter(
    "kernelwatch_jobs_expired",
    "Leases that expired: the job queued again or, out of attempts, failed",
)
HTTP_REQUESTS = Counter(
    "kernelwatch_http_requests",
    "HTTP requests answered, by route template, method and status",
    ["route", "method", "status"],
)
HTTP_SECONDS = Histogram(
    "kernelwatch_http_request_seconds",
    "Seconds to answer an HTTP request, by route template",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)


def exposition(extra: CollectorRegistry | None = None) -> bytes:
    """The text format of every counter of this server (all its worker processes in
    multiprocess mode) followed by `extra`'s metrics."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    return text + (generate_latest(extra) if extra is not None else b"")

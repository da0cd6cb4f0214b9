"""A document's workloads as rows (service.store.history.workload_rows), on SQLite and
PostgreSQL: a series is named by its repository, suite, workload, parameters, kernel, metric,
environment and timing method; every timing is summarized in microseconds, a runner's summary
that its samples contradict fails the document and samples that overflow or underflow in
microseconds are refused, each naming the workload; a workload's measures are its median prepare
time, its largest peak memory and, where it was timed, its numeric error; the ingest writes each
result with its samples, process counts and median clock; and the bulk insert keeps the columns'
own conversions, handing rows that leave a column to its default to SQLAlchemy."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import InvalidDocument
from service.models import CorrectnessOutcome, Notification, Result, RunWorkload
from service.schemas.document import RunDocument
from service.store.history.samples import unpack_samples
from service.store.history.workload_rows import (
    SummaryMismatch,
    drawn_ids,
    many,
    measures_of,
    series_identity,
    summarize_timings,
)
from tests.documents import document
from tests.service.store.conftest import Store


def parsed(doc: dict[str, Any]) -> RunDocument:
    return RunDocument.model_validate(doc)


def processes(doc: dict[str, Any], **fields: Any) -> list[dict[str, Any]]:
    """The first workload's processes, each given `fields` (a list: one value a process)."""
    procs = doc["workloads"][0]["timing"]["processes"]
    for name, values in fields.items():
        for process, value in zip(procs, values, strict=True):
            process[name] = value
    return procs


def test_a_series_identity_holds_its_timing_method_environment_and_parameters() -> None:
    doc = parsed(document(commit="c0"))
    workload = doc.workloads[0]
    timing = workload.timing
    assert timing is not None

    def identity(**changes: Any) -> str:
        w = workload.model_copy(update=changes.pop("workload", {}))
        t = timing.model_copy(update=changes.pop("timing", {}))
        return series_identity(1, "kernels", w, t, changes.pop("fingerprint", "f" * 16))

    same = identity()
    assert identity() == same
    assert identity(timing={"method": "cupti"}) != same
    assert identity(fingerprint="e" * 16) != same
    assert identity(workload={"params": {**workload.params, "m": 2048}}) != same
    assert identity(timing={"l2_flushed": False}) == same  # how it was timed, not what


def test_timings_are_summarized_in_microseconds_and_untimed_workloads_skipped() -> None:
    doc = document(commit="c0", medians={"a": 100.0, "b": 50.0})
    doc["workloads"][0]["timing"]["unit"] = "ms"  # the same numbers, a thousand times longer
    doc["workloads"][1].update(status="failed", timing=None, correctness=None)
    (timed,) = summarize_timings(parsed(doc), repository_id=1)
    assert timed.index == 0
    assert timed.summary.median == pytest.approx(100_000.0, rel=0.01)
    assert timed.summary.n == len(timed.samples) == 60


def test_a_runners_summary_its_samples_contradict_fails_the_document() -> None:
    doc = document(commit="c0")
    samples = np.concatenate([p["samples"] for p in processes(doc)])
    timing = doc["workloads"][0]["timing"]
    timing.update(n=60, median=float(np.median(samples)), max=float(samples.max()))
    summarize_timings(parsed(doc), repository_id=1)  # true to its samples: taken
    timing["median"] *= 1.01
    with pytest.raises(SummaryMismatch, match=r"workloads\[0\]\.timing\.median is "):
        summarize_timings(parsed(doc), repository_id=1)


@pytest.mark.parametrize(
    ("unit", "sample", "words"),
    [("s", 1e303, "overflows to infinity"), ("ns", 5e-324, "underflows to zero")],
)
def test_samples_beyond_what_microseconds_hold_are_refused(
    unit: str, sample: float, words: str
) -> None:
    doc = document(commit="c0")
    doc["workloads"][0]["timing"]["unit"] = unit
    processes(doc)[0]["samples"][0] = sample
    with pytest.raises(InvalidDocument, match=rf"workloads\[0\]\.timing\.processes: .*{words}"):
        summarize_timings(parsed(doc), repository_id=1)


def test_a_workloads_measures_are_its_median_prepare_largest_memory_and_its_error() -> None:
    doc = document(commit="c0", medians={"a": 100.0, "b": 50.0})
    processes(doc, prepare_seconds=[3.0, 1.0, 2.5], peak_memory_bytes=[10, 30, 20])
    doc["workloads"][1].update(status="failed", timing=None)
    ran, failed = parsed(doc).workloads
    assert measures_of(ran) == {
        "prepare_seconds": 2.5,
        "peak_memory_bytes": 30.0,
        "numeric_error": 1e-7,
    }
    # A workload that did not run has no error to judge, though its check reported one.
    assert measures_of(failed) == {}


def test_a_prepare_time_is_taken_from_the_suites_processes_else_says_where_it_was() -> None:
    doc = document(commit="c0", medians={"a": 100.0})
    procs = processes(doc, prepare_seconds=[1.0, 1.2, 4.0])
    procs[0]["process"] = procs[1]["process"] = "suite"
    procs[2]["process"] = "short"  # prepared first in its process: not the suite's median
    assert measures_of(parsed(doc).workloads[0])["prepare_seconds"] == 1.1
    # Timed in pairs against the base: the pairs' median, with the base's from the same pairs.
    for proc in procs:
        proc["process"] = "paired"
    base = document(commit="c1", medians={"a": 100.0}, seed=5)
    processes(base, prepare_seconds=[2.0, 3.0, 2.5], process=["paired"] * 3)
    measured = measures_of(parsed(doc).workloads[0], parsed(base).workloads[0])
    assert (measured["prepare_seconds"], measured["prepare_process"]) == (1.2, "paired")
    assert measured["prepare_paired_base"] == 2.5


def test_the_ingest_writes_each_result_with_its_samples_counts_and_clock(
    factory: sessionmaker[Session], store: Store
) -> None:
    doc = document(commit="c0", medians={"a": 100.0})
    procs = processes(doc, sm_clock_mhz=[1980.0, 1755.0, 1410.0])
    procs[2]["samples"] = procs[2]["samples"][:5]
    run_id = store(doc)
    with factory() as session:
        result = session.scalars(select(Result)).one()
        workload = session.scalars(select(RunWorkload)).one()
        check = session.scalars(select(CorrectnessOutcome)).one()
    assert (result.run_id, result.run_workload_id, result.method) == (
        run_id,
        workload.id,
        "cuda_events",
    )
    assert result.process_counts == [20, 20, 5]
    assert result.sm_clock_mhz == 1755.0
    sent = [x for p in procs for x in p["samples"]]
    assert unpack_samples(result.samples).tolist() == sent
    assert result.n == 45 and result.median == pytest.approx(float(np.median(sent)))
    assert (workload.name, workload.params["act"], workload.measures) == (
        "gemm_fwd",
        "a",
        {"numeric_error": 1e-7},
    )
    assert (check.run_workload_id, check.passed, check.precision) == (workload.id, True, "fp32")


def test_the_bulk_insert_keeps_the_columns_conversions_and_their_defaults(
    factory: sessionmaker[Session],
) -> None:
    at = datetime(2026, 11, 1, 12, 30, tzinfo=UTC)
    whole = {"kind": "run_broken", "key": "whole", "repository": "acme/k", "branch": "main",
             "payload": {"nested": [1, {"x": "y"}]}, "created_at": at}  # fmt: skip
    partial = {"kind": "run_broken", "key": "partial", "repository": "acme/k", "branch": "main",
               "payload": {}}  # fmt: skip
    with factory() as session, session.begin():
        many(session, Notification, [whole])  # every column: straight through the driver
        many(session, Notification, [partial])  # created_at left to its default
        many(session, Notification, [])
    with factory() as session:
        rows = {n.key: n for n in session.scalars(select(Notification))}
    assert rows["whole"].payload == {"nested": [1, {"x": "y"}]}
    assert rows["whole"].created_at == at
    assert rows["partial"].created_at.tzinfo is not None
    assert rows["partial"].id > rows["whole"].id


def test_ids_are_drawn_with_the_run_row_on_postgresql_only(
    factory: sessionmaker[Session],
) -> None:
    with factory() as session:
        assert drawn_ids(session, RunWorkload, 0) is None
        drawn = drawn_ids(session, RunWorkload, 3)
        assert (drawn is None) == (session.get_bind().dialect.name == "sqlite")

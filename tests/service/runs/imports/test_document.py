"""The result document of an imported file (service.runs.imports.document): its run id the same
for the same file imported for the same repository, commit and branch, and another for any
other; the commit's time the one given, else when the tool ran, else now; one workload per
series, a timing only where the series ran, its kernel label the series' name where it has
none; at most MAX_SAMPLES_PER_TIMING samples, evenly spaced, the timing's note saying how many
were kept; and a document that validates like a runner's."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.runs.imports import ImportedFile, ImportedSeries
from service.runs.imports.document import run_id, thinned, to_document
from service.runs.imports.gbench import parse
from service.schemas.document import MAX_SAMPLES_PER_TIMING, RunDocument
from tests.documents import sha_for

SAXPY = Path(__file__).parents[1] / "fixtures" / "gbench" / "saxpy_base.json"
RAN_AT = datetime(2026, 11, 26, 13, 25, 16, tzinfo=UTC)


def imported(*series: ImportedSeries, started_at: datetime | None = RAN_AT) -> ImportedFile:
    environment = parse(SAXPY.read_bytes()).environment
    return ImportedFile("gbench", "gbench:bench", environment, list(series), started_at)


def made(file: ImportedFile, committed_at: datetime | None = None) -> dict:
    return to_document(
        file,
        run="import-gbench-x",
        repository="acme/kernels",
        commit=sha_for("c"),
        branch="main",
        committed_at=committed_at,
    )


def test_the_same_file_for_the_same_commit_is_the_same_run() -> None:
    data = SAXPY.read_bytes()
    first = run_id("gbench", data, "acme/kernels", sha_for("c"), "main")
    assert first == run_id("gbench", data, "acme/kernels", sha_for("c"), "main")
    assert re.fullmatch(r"import-gbench-[0-9a-f]{40}", first)
    others = {
        run_id("gbench", data + b" ", "acme/kernels", sha_for("c"), "main"),
        run_id("gbench", data, "acme/other", sha_for("c"), "main"),
        run_id("gbench", data, "acme/kernels", sha_for("d"), "main"),
        run_id("gbench", data, "acme/kernels", sha_for("c"), "release"),
    }
    assert first not in others and len(others) == 4


def test_the_fields_are_kept_apart_in_the_run_id() -> None:
    """A character moved from one field to the next is another run."""
    assert run_id("gbench", b"", "ab", "c", "d") != run_id("gbench", b"", "a", "bc", "d")
    assert run_id("gbench", b"", "a", "bc", "d") != run_id("gbench", b"", "a", "b", "cd")


def test_the_commits_time_is_the_one_given_else_when_the_tool_ran_else_now() -> None:
    given = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    series = ImportedSeries("k", {}, [1.0])
    assert made(imported(series), committed_at=given)["commit"]["committed_at"] == (
        given.isoformat()
    )
    ran = made(imported(series))
    assert ran["commit"]["committed_at"] == RAN_AT.isoformat()
    assert ran["started_at"] == ran["finished_at"] == RAN_AT.isoformat()
    before = datetime.now(UTC)
    undated = made(imported(series, started_at=None))
    when = datetime.fromisoformat(undated["commit"]["committed_at"])
    assert before <= when <= datetime.now(UTC) + timedelta(seconds=1)
    assert undated["started_at"] == undated["commit"]["committed_at"]


def test_one_workload_per_series_with_a_timing_only_where_it_ran() -> None:
    ran = ImportedSeries(
        "BM_copy", {"arg0": 8}, [2.0, 3.0], unit="us", kernel="BM_copy/8", note="10 repetitions"
    )
    unnamed = ImportedSeries("BM_fill", {}, [5.0])
    failed = ImportedSeries("BM_fails", {}, [], status="failed", error="out of memory")
    doc = made(imported(ran, unnamed, failed))
    first, second, third = doc["workloads"]
    assert (first["name"], first["params"], first["kernels"]) == (
        "BM_copy",
        {"arg0": 8},
        ["BM_copy/8"],
    )
    assert first["timing"] == {
        "kernel": "BM_copy/8",
        "unit": "us",
        "method": "host",
        "stop_reason": "10 repetitions",
        "processes": [{"samples": [2.0, 3.0]}],
    }
    assert second["kernels"] == ["BM_fill"] and second["timing"]["kernel"] == "BM_fill"
    assert (third["status"], third["error"]) == ("failed", "out of memory")
    assert "timing" not in third
    assert doc["log_tail"] == "imported from gbench output (3 series)"
    assert (doc["status"], doc["build"]) == ("succeeded", {"status": "ok"})
    assert doc["suite"] == "gbench:bench"


def test_a_real_files_document_validates_as_a_runners() -> None:
    file = parse(SAXPY.read_bytes())
    doc = RunDocument.model_validate(made(file))
    assert len(doc.workloads) == len(file.series) == 6
    assert doc.repository.name == "acme/kernels" and doc.branch == "main"


def test_more_samples_than_a_document_holds_are_thinned_evenly() -> None:
    kept = thinned([float(i) for i in range(250_000)], limit=100_000)
    assert len(kept) == 100_000 and kept[0] == 0.0 and kept[-1] == 249_997.0
    assert kept[1] - kept[0] in (2.0, 3.0)
    short = [1.0, 2.0]
    assert thinned(short) is short
    assert thinned([1.0, 2.0, 3.0, 4.0], limit=2) == [1.0, 3.0]


MANY = MAX_SAMPLES_PER_TIMING * 5 // 2


@pytest.mark.parametrize(
    ("count", "note"),
    [(MAX_SAMPLES_PER_TIMING, "cold"), (MANY, f"cold; every 2.50th of {MANY} samples kept")],
)
def test_the_timings_note_says_how_many_samples_were_kept(count: int, note: str) -> None:
    series = ImportedSeries("k", {}, [1.0] * count, note="cold")
    timing = made(imported(series))["workloads"][0]["timing"]
    assert timing["stop_reason"] == note
    assert len(timing["processes"][0]["samples"]) == min(count, MAX_SAMPLES_PER_TIMING)


def test_the_note_is_cut_to_what_a_document_holds() -> None:
    series = dataclasses.replace(ImportedSeries("k", {}, [1.0]), note="n" * 5000)
    assert made(imported(series))["workloads"][0]["timing"]["stop_reason"] == "n" * 1000

"""runner.run.base_side on the CPU fixture suite: one side of an interleaved comparison. Its
commit built with the build cache's environment, only the workloads asked for (by name and
params) listed and checked, in the number of check processes the caller chooses, those that
pass its check ready for timing, none at all where the build failed; and its document, of the
records chosen, with the job's ids where given."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.run.base_side import Side, prepare, side_document
from runner.suite.checkout import CommitInfo
from runner.suite.load import Suite
from tests.runner.gitrepo import CPU_SUITE

COMMIT = CommitInfo(
    "b" * 40,
    ["a" * 40],
    "Ada Lovelace",
    "ada@example.com",
    "base",
    datetime(2026, 11, 28, tzinfo=UTC),
    ["a" * 40],
)
WANTED = [
    {"name": "fma", "params": {"n": 256}},
    {"name": "nan", "params": {"n": 8}},  # checked and failing: no timing for it
    {"name": "fma", "params": {"n": 1024}},  # not in the suite: nothing to time
]


class Workers:
    """check_workers: how many check processes a side's suite gets, and for which suites."""

    def __init__(self, count: int) -> None:
        self.count, self.asked = count, []

    def __call__(self, suite: Suite) -> int:
        self.asked.append(suite.name)
        return self.count


@pytest.fixture(scope="module")
def side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Path, Workers]]:
    tmp = tmp_path_factory.mktemp("side")
    tree = shutil.copytree(CPU_SUITE, tmp / "tree")
    workers = Workers(2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KW_FIXTURE_MISBEHAVE", "nan")  # the suite lists a workload that fails
        yield prepare(tree, COMMIT, tmp / "build", tmp / "cache", WANTED, workers), tmp, workers


def test_only_the_workloads_asked_for_are_checked_and_those_that_pass_are_timed(
    side: tuple[Side, Path, Workers],
) -> None:
    prepared, _, workers = side
    assert list(prepared.records) == ["fma[n=256]", "nan[n=8]"]
    assert prepared.passing == ["fma[n=256]"]
    assert prepared.records["nan[n=8]"].check is not None
    assert prepared.records["nan[n=8]"].passed is False
    assert workers.asked == ["cpu-fixture"]  # once, for the check


def test_a_side_is_built_in_its_folder_with_the_runners_build_cache(
    side: tuple[Side, Path, Workers],
) -> None:
    prepared, tmp, _ = side
    assert prepared.build.status == "ok" and "build ok 1" in prepared.build.log_tail
    assert prepared.env["KERNELWATCH_BUILD_DIR"] == str(tmp / "build")
    assert prepared.env["KERNELWATCH_BUILD_CACHE"] == str(tmp / "cache" / "builds")
    assert prepared.commit is COMMIT and prepared.suite.root == tmp / "tree"
    assert prepared.environment["gpu"]["name"].startswith("CPU: ")
    assert prepared.environment["fingerprint"]


def test_a_sides_document_holds_the_records_chosen_and_the_jobs_ids(
    side: tuple[Side, Path, Workers],
) -> None:
    prepared, _, _ = side
    started = datetime(2026, 11, 28, 12, tzinfo=UTC)
    repository = {"name": "acme/kernels", "url": None}
    common = {"repository": repository, "branch": "main", "runner": None, "started": started}
    head = side_document(
        prepared,
        log_tail="confirmation (head)",
        records=["fma[n=256]"],
        job_id=12,
        lease_token="kwa_lease",
        **common,
    )
    assert [(w["name"], w["params"]) for w in head["workloads"]] == [("fma", {"n": 256})]
    assert (head["job_id"], head["lease_token"]) == (12, "kwa_lease")
    assert (head["suite"], head["commit"]["sha"], head["branch"]) == (
        "cpu-fixture",
        "b" * 40,
        "main",
    )
    assert head["started_at"] == started.isoformat() and head["log_tail"] == "confirmation (head)"
    whole = side_document(prepared, log_tail="", **common)
    assert [w["name"] for w in whole["workloads"]] == ["fma", "nan"]
    assert (whole["job_id"], whole["lease_token"]) == (None, None)
    assert whole["status"] == "failed"  # the workload that failed its check is in it
    assert uuid.UUID(whole["run_id"]) != uuid.UUID(head["run_id"])
    # the suite's policy on work counters, as its own runs carry it
    strict = dataclasses.replace(
        prepared, suite=dataclasses.replace(prepared.suite, work_changes="fail")
    )
    assert side_document(strict, log_tail="", **common)["work_changes"] == "fail"


def test_a_side_whose_build_fails_has_nothing_to_check_or_time(tmp_path: Path) -> None:
    tree = shutil.copytree(CPU_SUITE, tmp_path / "tree")
    toml = tree / "kernelwatch.toml"
    lines = [line for line in toml.read_text().splitlines() if not line.startswith("build =")]
    lines.insert(1 + lines.index("[suite]"), "build = [\"echo 'nvcc: not found' >&2; exit 127\"]")
    toml.write_text("\n".join(lines) + "\n")
    workers = Workers(1)
    failed = prepare(tree, COMMIT, tmp_path / "build", tmp_path / "cache", WANTED, workers)
    assert failed.build.status == "failed" and "exit code 127" in failed.build.log_tail
    assert (failed.records, failed.passing, workers.asked) == ({}, [], [])

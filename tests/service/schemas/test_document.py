"""The result document as service/schemas/document.py reads it: a sha is 40 hex digits kept in
lower case; times carry an offset and are kept in UTC, within the years 1-9999; a commit's line
is never circular and its first-parent ancestors start at its first parent; a passed correctness
check agrees with its numbers; a timing is in a time unit, of positive samples, at most 100,000
of them; ncu units are known ones; a kernel is named once per list; a workload's parameters fit
their 2000-byte key; and a run is consistent with its build, its pull request and its paired
base. Each refusal names the field and what is wrong with it."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from service.schemas.document import (
    MAX_SAMPLES_PER_TIMING,
    CommitIn,
    CorrectnessIn,
    NcuKernelIn,
    RunDocument,
    Sha,
    TimingIn,
    UtcDatetime,
    WorkloadIn,
    params_key,
)
from tests.documents import document, sha_for

A, B, C = sha_for("a"), sha_for("b"), sha_for("c")
WHEN = "2026-11-01T12:00:00+00:00"


def refusal(model: Any, value: Any) -> list[tuple[tuple, str]]:
    """(where, why) of each error, as the 422 answer gives them."""
    adapter = model if isinstance(model, TypeAdapter) else TypeAdapter(model)
    with pytest.raises(ValidationError) as refused:
        adapter.validate_python(value)
    return [(e["loc"], e["msg"].removeprefix("Value error, ")) for e in refused.value.errors()]


def timing(**given: Any) -> dict[str, Any]:
    return {"kernel": "k", "unit": "us", "method": "cupti",
            "processes": [{"samples": [10.0, 10.5]}], **given}  # fmt: skip


# --- shas and times ---------------------------------------------------------------------------


def test_a_sha_is_kept_in_lower_case() -> None:
    assert TypeAdapter(Sha).validate_python(A.upper()) == A


@pytest.mark.parametrize("sha", [A[:39], A + "0", "g" * 40, A[:12]])
def test_anything_but_40_hex_digits_is_no_sha(sha: str) -> None:
    assert refusal(Sha, sha)


def test_a_time_is_kept_in_utc() -> None:
    when = TypeAdapter(UtcDatetime).validate_python("2026-11-01T14:30:00+02:30")
    assert when == datetime(2026, 11, 1, 12, 0, tzinfo=UTC) and when.tzinfo is UTC


def test_a_time_without_an_offset_is_refused() -> None:
    assert refusal(UtcDatetime, "2026-11-01T12:00:00")


def test_a_time_that_leaves_the_calendar_once_in_utc_is_refused_with_the_time() -> None:
    # Midnight of year 1 at +05:00 is 19:00 on the last day of year 0 in UTC.
    [(_, why)] = refusal(UtcDatetime, "0001-01-01T00:00:00+05:00")
    assert why == (
        "0001-01-01T00:00:00+05:00 is outside the years 1-9999 once in UTC; send a real time"
    )
    year_one = TypeAdapter(UtcDatetime).validate_python("0001-01-01T05:00:00+05:00")
    assert year_one == datetime(1, 1, 1, tzinfo=UTC)  # the boundary itself is a real time


# --- a commit's line --------------------------------------------------------------------------


def commit(**given: Any) -> dict[str, Any]:
    return {"sha": A, "committed_at": WHEN, **given}


def test_a_commits_first_parent_line_is_taken_as_sent() -> None:
    line = CommitIn.model_validate(commit(parents=[B, C], ancestors=[B.upper()]))
    assert (line.parents, line.ancestors) == ([B, C], [B])


@pytest.mark.parametrize(("field", "what"), [("parents", "parent"), ("ancestors", "ancestor")])
def test_a_commit_is_never_its_own_parent_or_ancestor(field: str, what: str) -> None:
    assert refusal(CommitIn, commit(**{field: [B, A]})) == [
        ((field,), f"{field}[1] is the commit itself: a commit cannot be its own {what}")
    ]


def test_a_line_that_passes_a_commit_twice_is_a_cycle() -> None:
    assert refusal(CommitIn, commit(ancestors=[B, C, B])) == [
        (
            ("ancestors",),
            f"ancestors[2] repeats ancestors[0] ({B[:12]}): a commit's line cannot pass a "
            "commit twice (a cycle)",
        )
    ]


def test_the_ancestors_start_at_the_first_parent() -> None:
    [(_, why)] = refusal(CommitIn, commit(parents=[B], ancestors=[C, B]))
    assert why.startswith(
        f"ancestors[0] ({C[:12]}) must be the first parent, parents[0] ({B[:12]})"
    )
    # Either list alone is fine: an old runner sent no ancestors, a root commit no parents.
    assert CommitIn.model_validate(commit(parents=[B])).ancestors == []
    assert CommitIn.model_validate(commit(ancestors=[C])).parents == []


# --- correctness and timings ------------------------------------------------------------------


def correctness(**given: Any) -> dict[str, Any]:
    return {"passed": True, "error_norm": 1e-6, "tolerance": 1e-5, "precision": "fp32", **given}


def test_a_pass_at_exactly_the_tolerance_is_a_pass() -> None:
    assert CorrectnessIn.model_validate(correctness(error_norm=1e-5)).passed


@pytest.mark.parametrize("given", [{"error_norm": 2e-5}, {"error_norm": None}, {"unwritten": 1}])
def test_a_pass_that_its_numbers_contradict_is_refused(given: dict[str, Any]) -> None:
    [(_, why)] = refusal(CorrectnessIn, correctness(**given))
    assert why == (
        "passed is true, but error_norm is missing or above tolerance, or elements are unwritten"
    )
    assert not CorrectnessIn.model_validate(correctness(passed=False, **given)).passed


def test_a_timing_unit_must_be_a_time_unit() -> None:
    assert refusal(TimingIn, timing(unit="cycle")) == [
        (("unit",), "unknown time unit 'cycle'; use one of ['ms', 'ns', 's', 'us']")
    ]


@pytest.mark.parametrize("sample", [0.0, -1.0, float("nan"), float("inf")])
def test_every_sample_is_a_positive_finite_time(sample: float) -> None:
    [(where, _)] = refusal(TimingIn, timing(processes=[{"samples": [1.0, sample]}]))
    assert where == ("processes", 0, "samples", 1)


def test_a_timing_takes_at_most_100000_samples_over_all_its_processes() -> None:
    half = [{"samples": [1.0] * (MAX_SAMPLES_PER_TIMING // 2)}] * 2
    assert len(TimingIn.model_validate(timing(processes=half)).processes) == 2
    over = [*half, {"samples": [1.0]}]
    assert refusal(TimingIn, timing(processes=over)) == [
        ((), "100001 samples; at most 100000 per timing")
    ]


def test_an_ncu_metric_in_an_unknown_unit_is_named() -> None:
    metrics = {"dram__bytes.sum": {"value": 1.0, "unit": "byte"},
               "smsp__x": {"value": 2.0, "unit": "furlong/s"}}  # fmt: skip
    assert refusal(NcuKernelIn, {"kernel": "k", "metrics": metrics}) == [
        ((), "metrics['smsp__x'].unit: unknown unit 'furlong/s'")
    ]


# --- workloads --------------------------------------------------------------------------------


def workload(**given: Any) -> dict[str, Any]:
    return {"name": "gemm_fwd", "status": "ok", **given}


def test_the_params_key_is_canonical_json() -> None:
    assert params_key({"n": 2, "act": "relu", "m": [1, 2.5]}) == '{"act":"relu","m":[1,2.5],"n":2}'


def test_parameters_may_take_2000_bytes_as_their_key_and_no_more() -> None:
    # {"a":"<x>","b":"<y>"} is 15 bytes besides the two values (each at most 1000 characters).
    fits = {"a": "x" * 1000, "b": "y" * 985}
    assert len(params_key(fits)) == 2000
    assert WorkloadIn.model_validate(workload(params=fits)).params == fits
    assert refusal(WorkloadIn, workload(params={**fits, "b": "y" * 986})) == [
        (("params",), "the parameters take 2001 bytes as canonical JSON; at most 2000")
    ]


def test_a_timing_belongs_to_a_workload_that_ran_ok() -> None:
    assert refusal(WorkloadIn, workload(status="timeout", timing=timing())) == [
        ((), "timing given for a workload with status 'timeout'")
    ]


def test_a_workload_whose_check_failed_is_not_ok() -> None:
    failed = correctness(passed=False, error_norm=1.0)
    assert refusal(WorkloadIn, workload(correctness=failed)) == [
        ((), "status is 'ok' but the correctness check failed")
    ]
    assert WorkloadIn.model_validate(workload(status="correctness_failed", correctness=failed))


def test_a_kernel_named_twice_in_a_list_is_refused_at_its_second_place() -> None:
    compiled = [{"kernel": "k1"}, {"kernel": "k2"}, {"kernel": "k1"}]
    assert refusal(WorkloadIn, workload(compiled=compiled)) == [
        (("compiled",), "[2]: kernel 'k1' is named twice in compiled")
    ]


def test_a_field_the_contract_does_not_have_is_refused() -> None:
    [(where, _)] = refusal(WorkloadIn, workload(priority=1))
    assert where == ("priority",)


# --- the run ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return document(commit="c1", parents=["c0"], ancestors=["c0"])


def test_a_document_as_the_runner_writes_it_is_read(raw: dict[str, Any]) -> None:
    doc = RunDocument.model_validate(raw)
    assert doc.commit.sha == sha_for("c1") and doc.commit.parents == [sha_for("c0")]
    assert (doc.work_changes, doc.paired_base, doc.pull_request) == ("notice", None, None)


def run_refusal(raw: dict[str, Any], change: Any) -> list[str]:
    changed = copy.deepcopy(raw)
    change(changed)
    return [why for _, why in refusal(RunDocument, changed)]


def test_a_run_cannot_finish_before_it_started(raw: dict[str, Any]) -> None:
    def swap(d: dict) -> None:
        d["started_at"], d["finished_at"] = "2026-11-01T12:05:00Z", "2026-11-01T12:00:00Z"

    assert run_refusal(raw, swap) == ["finished_at is before started_at"]


def test_a_failed_build_carries_no_timings(raw: dict[str, Any]) -> None:
    assert run_refusal(raw, lambda d: d["build"].update(status="failed")) == [
        "the build failed, yet workloads carry timings"
    ]


def test_a_run_whose_build_failed_says_so_in_its_build(raw: dict[str, Any]) -> None:
    def build_failed(d: dict) -> None:
        d["status"], d["workloads"] = "build_failed", []

    assert run_refusal(raw, build_failed) == [
        "status is 'build_failed' but build.status is not 'failed'"
    ]


def test_a_workload_measured_twice_with_the_same_parameters_is_refused(
    raw: dict[str, Any],
) -> None:
    said = run_refusal(raw, lambda d: d["workloads"].append(copy.deepcopy(d["workloads"][0])))
    assert said == [f"workload gemm_fwd {params_key(raw['workloads'][0]['params'])} appears twice"]


def test_a_pull_requests_run_is_on_its_pull_branch(raw: dict[str, Any]) -> None:
    def pull(d: dict) -> None:
        d["pull_request"] = {"number": 12, "base_ref": "main"}

    assert run_refusal(raw, pull) == ["a pull request's run is on branch pull/12, not 'main'"]
    on_its_branch = copy.deepcopy(raw)
    pull(on_its_branch)
    on_its_branch["branch"] = "pull/12"
    assert RunDocument.model_validate(on_its_branch).pull_request.number == 12


def test_a_paired_base_measures_another_commit_of_the_same_suite(raw: dict[str, Any]) -> None:
    def paired(**base_given: Any) -> Any:
        def change(d: dict) -> None:
            base = document(commit="c0")
            base.update(base_given)
            d["paired_base"] = base

        return change

    assert run_refusal(raw, paired(commit=raw["commit"])) == [
        "paired_base measures the run's own commit, not a base"
    ]
    assert run_refusal(raw, paired(suite="other")) == [
        f"paired_base is acme/kernels suite other, not the run's acme/kernels suite {raw['suite']}"
    ]
    base = copy.deepcopy(raw)
    paired()(base)
    assert run_refusal(raw, lambda d: d.update(paired_base=base)) == [
        "paired_base cannot itself carry a paired_base"
    ]

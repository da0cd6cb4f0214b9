"""The read routes' answers of service/schemas/metrics.py: every change and tolerance they carry
is documented as a fraction (the pages show percentages), the closed vocabularies (an alert's
role at a commit, a work or measure verdict, the ncu detail) refuse other words, a commit's ncu
values are plain dicts whose runner label is optional, and the defaults a reader relies on: a
baseline of one result, no samples unless asked, nothing pending, no alerts or bisections."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

import pytest
from pydantic import ValidationError

from service.schemas.metrics import (
    CHANGE,
    FRACTION,
    AlertAtCommit,
    Analysis,
    Baseline,
    ChangePointPublic,
    CommitMetrics,
    CommitPublic,
    KernelPublic,
    MeasurePublic,
    MetricPublic,
    NcuDetail,
    SeriesPoint,
    SeriesPublic,
    Statistics,
    WorkPublic,
)

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
SERIES = {
    "id": 3, "repository": "acme/kernels", "suite": "gemm", "workload": "gemm_fwd",
    "params": {"m": 1024}, "kernel": "gemm_bias_act_f32", "metric": "duration", "unit": "us",
    "method": "cuda_events", "fingerprint": "00000000000000aa",
}  # fmt: skip
STATS = {"n": 60, "median": 100.0, "q1": 99.8, "q3": 100.2, "min": 99.1, "max": 101.0,
         "mean": 100.0, "stdev": 0.3, "rel_iqr": 0.004}  # fmt: skip


def description(model: type, field: str) -> str:
    return model.model_json_schema()["properties"][field]["description"]


def test_the_fraction_wordings_give_an_example() -> None:
    assert CHANGE == "relative change as a fraction: 0.05 is +5%"
    assert FRACTION == "as a fraction: 0.05 is 5%"


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (MetricPublic, "change"),
        (Analysis, "change"),
        (ChangePointPublic, "change"),
        (WorkPublic, "change"),
        (MeasurePublic, "change"),
        (AlertAtCommit, "change"),
    ],
)
def test_every_change_is_documented_as_a_relative_fraction(model: type, field: str) -> None:
    assert CHANGE in description(model, field)


@pytest.mark.parametrize(
    ("model", "field"), [(Statistics, "rel_iqr"), (Analysis, "floor"), (WorkPublic, "tolerance")]
)
def test_spreads_floors_and_tolerances_are_documented_as_fractions(model: type, field: str) -> None:
    assert FRACTION in description(model, field)


def alert_at_commit(role: str) -> AlertAtCommit:
    return AlertAtCommit(
        role=role, id=1, state="open", change=0.2, summary="k: +20%", series=SERIES,
        branch="main", commit="c" * 40, first_bad_commit=None, fixed_by_commit=None,
    )  # fmt: skip


@pytest.mark.parametrize(
    "role",
    ["opened here", "started here (bisection)", "opened here, bisected to an earlier commit",
     "fixed here"],
)  # fmt: skip
def test_an_alert_at_a_commit_has_one_of_its_four_roles(role: str) -> None:
    alert = alert_at_commit(role)
    # The series is declared after this model in the module: it must still be read as one.
    assert alert.role == role and isinstance(alert.series, SeriesPublic)


def test_an_alert_at_a_commit_refuses_another_role() -> None:
    with pytest.raises(ValidationError):
        alert_at_commit("closed here")


def test_the_ncu_detail_is_none_summary_or_all() -> None:
    assert set(get_args(NcuDetail)) == {"none", "summary", "all"}


def commit_metrics(**given: object) -> CommitMetrics:
    commit = CommitPublic(sha="c" * 40, repository="acme/kernels", parents=[], author_name="A",
                          author_email="a@x", message="m", committed_at=NOW)  # fmt: skip
    fields = {"commit": commit, "branch": "main", "runs": [], "workloads": [], "absent": [],
              "verdict_counts": {}}  # fmt: skip
    return CommitMetrics(**{**fields, **given})


def test_a_commits_metrics_must_say_how_much_ncu_they_carry() -> None:
    with pytest.raises(ValidationError) as refused:
        commit_metrics()
    assert [e["loc"] for e in refused.value.errors()] == [("ncu",)]
    with pytest.raises(ValidationError):
        commit_metrics(ncu="everything")


def test_a_commits_metrics_have_nothing_pending_and_no_alerts_unless_told() -> None:
    metrics = commit_metrics(ncu="summary")
    assert (metrics.analysis_pending, metrics.change_points_pending) == (False, False)
    assert (metrics.alerts, metrics.found_here, metrics.bisected) == ([], [], {})


def test_ncu_values_are_plain_dicts_and_the_runners_label_is_optional() -> None:
    throughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    values = {
        "dram__bytes.sum": {"value": 1.5e9, "unit": "byte"},
        throughput: {"value": 71.0, "unit": "%", "label": "SM throughput"},
    }
    kernel = KernelPublic(kernel="k", metrics=[], ncu_metrics=values, ncu_findings=[], build=None)
    assert kernel.ncu_metrics == values
    assert type(kernel.ncu_metrics["dram__bytes.sum"]) is dict
    assert kernel.work == []


def test_an_ncu_value_needs_its_unit() -> None:
    with pytest.raises(ValidationError):
        KernelPublic(kernel="k", metrics=[], ncu_metrics={"x": {"value": 1.0}}, ncu_findings=[],
                     build=None)  # fmt: skip


@pytest.mark.parametrize("verdict", ["changed", "same", "new", "learning"])
def test_a_work_counter_is_changed_same_new_or_learning(verdict: str) -> None:
    work = WorkPublic(counter="c", label="l", value=2.0, base_value=1.0, change=1.0,
                      verdict=verdict, note="")  # fmt: skip
    assert (work.verdict, work.tolerance, work.pairs) == (verdict, None, 0)


def test_a_work_counter_cannot_regress() -> None:
    # Work changes are notices, never a red commit: "regressed" is no work verdict.
    with pytest.raises(ValidationError):
        WorkPublic(counter="c", label="l", value=2.0, base_value=1.0, change=1.0,
                   verdict="regressed", note="")  # fmt: skip


def test_a_measure_is_one_of_three_with_a_verdict_of_its_own() -> None:
    said = "peak memory 1.07 GB → 1.61 GB (+50%), regressed"
    measure = MeasurePublic(measure="peak_memory_bytes", label="peak memory", unit="byte",
                            value=1.61e9, base_value=1.07e9, change=0.5, verdict="regressed",
                            tolerance=0.05, said=said)  # fmt: skip
    assert measure.verdict == "regressed"
    with pytest.raises(ValidationError):
        MeasurePublic.model_validate({**measure.model_dump(), "measure": "host_seconds"})
    with pytest.raises(ValidationError):
        MeasurePublic.model_validate({**measure.model_dump(), "verdict": "changed"})


def test_a_baseline_is_one_result_without_a_segment_until_analysed() -> None:
    baseline = Baseline(commit="b" * 40, run_id="run-0000", median=99.0, committed_at=NOW)
    assert (baseline.results, baseline.segment) == (1, None)


def test_a_series_point_has_no_samples_or_verdict_unless_given() -> None:
    point = SeriesPoint(commit="c" * 40, committed_at=NOW, author_name="A", subject="s",
                        run_id="run-0001", statistics=STATS)  # fmt: skip
    assert (point.samples, point.verdict) == (None, None)
    assert point.statistics.rel_iqr == 0.004

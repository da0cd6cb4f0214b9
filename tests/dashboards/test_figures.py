"""The bar figures and the formatting are pure: plain data in, what we can assert on out."""

from __future__ import annotations

import pytest

from dashboards.devices import achieved, device_peak
from dashboards.figures import breakdown_figure, change_figure, verdict_history_figure
from dashboards.format import fmt_pct, fmt_value, series_label
from dashboards.model import ChangeBar, ShareRow, VerdictColumn
from dashboards.style import VERDICT_COLOURS


def test_breakdown_puts_the_largest_share_on_top() -> None:
    rows = [
        ShareRow("gemm_bwd", 1, 180_000.0, 0.6),
        ShareRow("adamw", 1, 30_000.0, 0.1),
        ShareRow("gemm_fwd", 2, 90_000.0, 0.3),
    ]
    (bar,) = breakdown_figure(rows, title="train_step").data
    assert list(bar.y) == ["adamw", "gemm_fwd", "gemm_bwd"]  # plotly draws the last on top
    assert list(bar.x) == [0.1, 0.3, 0.6]
    assert list(bar.text) == ["10.0%", "30.0%", "60.0%"]
    assert bar.customdata[2][0] == "180 us" and bar.customdata[1][1] == 2


def test_a_change_is_drawn_against_its_class_target() -> None:
    """-0.1% of noise beside a 2% target: the axis spans the target, the bar stays a sliver,
    and ticks a tenth of a percent apart never repeat a label."""
    fig = change_figure([ChangeBar("k", -0.001, "unchanged", "", 0.02)])
    _bars, marks = fig.data
    assert list(marks.x) == [-0.02, 0.02] and list(marks.y) == ["k", "k"]
    assert fig.layout.showlegend is False
    low, high = fig.layout.xaxis.range
    assert low == pytest.approx(-0.023) and high == pytest.approx(0.023)
    assert fig.layout.xaxis.tickformat == "+.1%"
    wide = change_figure([ChangeBar("k", 0.25, "regressed", "", 0.02)])
    assert wide.layout.xaxis.range[1] == pytest.approx(0.2875)
    assert wide.layout.xaxis.tickformat == "+.0%"
    assert len(change_figure([ChangeBar("k", 0.01, "unchanged")]).data) == 1  # no target known


def test_change_bars_are_coloured_by_verdict() -> None:
    bars = [ChangeBar("a", 0.12, "regressed"), ChangeBar("b", -0.05, "improved")]
    bar = change_figure(bars).data[0]
    assert list(bar.y) == ["b", "a"] and list(bar.x) == [-0.05, 0.12]
    assert list(bar.marker.color) == [VERDICT_COLOURS["improved"], VERDICT_COLOURS["regressed"]]
    assert list(bar.text) == ["-5.0%", "+12.0%"]


def test_verdict_history_stacks_only_the_verdicts_seen() -> None:
    columns = [
        VerdictColumn("a" * 40, "aaaaaaa", {"new": 3}),
        VerdictColumn("b" * 40, "bbbbbbb", {"unchanged": 2, "regressed": 1}),
    ]
    fig = verdict_history_figure(columns)
    assert {t.name: list(t.y) for t in fig.data} == {
        "regressed": [0, 1],
        "new": [3, 0],
        "unchanged": [0, 2],
    }
    assert fig.layout.barmode == "stack"


def test_a_bisected_pushs_head_draws_its_regressions_hatched_not_grey() -> None:
    """The measured head of a push whose two regressions a bisection placed at an earlier
    commit: its bar holds them (hatched, in the regression's colour), with where they came in."""
    columns = [
        VerdictColumn("a" * 40, "aaaaaaa", {"unchanged": 5}),
        VerdictColumn("b" * 40, "bbbbbbb", {"unchanged": 3}, {"c" * 40: 2}),
    ]
    fig = verdict_history_figure(columns)
    (moved,) = [t for t in fig.data if t.name == "regressed, bisected earlier"]
    assert list(moved.y) == [0, 2] and moved.marker.pattern.shape == "/"
    assert moved.marker.color == VERDICT_COLOURS["regressed"]
    assert moved.customdata[1][1] == "ccccccc"


def test_peaks_and_fraction_of_peak() -> None:
    h100 = device_peak({"name": "NVIDIA H100 80GB HBM3", "sm_count": 132})
    assert h100 is not None and h100.bytes_per_s == pytest.approx(3.35e12)
    # 2.1 GFLOP in 100 us = 21 TFLOP/s = 31% of 67 TFLOP/s FP32; 12 MB = 120 GB/s.
    got = achieved(2.1e9, 1.2e7, 100e-6, h100, "fp32")
    assert got.flops_per_s == pytest.approx(21e12)
    assert got.flop_fraction == pytest.approx(21 / 67)
    assert got.byte_fraction == pytest.approx(120e9 / 3.35e12)
    assert got.bound == "compute" and got.fraction == got.flop_fraction
    assert achieved(2.1e9, 1.2e7, 100e-6, h100, "bf16").flop_fraction == pytest.approx(21 / 989.4)
    assert achieved(1e3, 4e9, 1e-3, h100).bound == "memory"
    unknown = device_peak(
        {"name": "Future GPU", "sm_count": 100, "compute_capability": "9.0"}, {"sm_max": 2000.0}
    )
    assert unknown is not None and unknown.flops["fp32"] == pytest.approx(100 * 128 * 2 * 2e9)
    assert unknown.bytes_per_s is None
    assert device_peak({"name": "Future GPU"}) is None
    nothing = achieved(None, None, 1e-3, None)
    assert (nothing.bound, nothing.fraction) == (None, None)


def test_formatting() -> None:
    assert fmt_value(570.912, "us") == "570.9 us"
    assert fmt_value(1234.5, "us") == "1.234 ms"
    assert fmt_value(0.5, "us") == "500 ns"
    assert fmt_value(42.0, "%") == "42 %"
    assert fmt_pct(0.078) == "+7.8%" and fmt_pct(None) == "–"
    assert series_label("gemm_fwd", {"m": 1024}, "gemm_bias_act_fwd") == (
        "gemm_fwd m=1024 · gemm_bias_act_fwd"
    )
    assert series_label("train_step", {}, "train_step") == "train_step"

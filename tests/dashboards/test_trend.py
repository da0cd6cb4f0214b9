"""The trend figure is pure: plain data in, a figure whose data we can assert on out."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from dashboards.model import TrendLine, TrendMarker, TrendPoint
from dashboards.trend import (
    BASELINE_LINES_MAX,
    LEGEND_CHARS,
    baseline_level,
    short_label,
    trend_figure,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def points(medians: list[float]) -> list[TrendPoint]:
    return [
        TrendPoint(
            sha=f"{i + 1:x}" * 40,
            committed_at=T0 + timedelta(minutes=i),
            author="Ada",
            subject=f"commit {i}",
            median=m,
            q1=m * 0.99,
            q3=m * 1.01,
        )
        for i, m in enumerate(medians)
    ]


def test_trend_has_a_band_a_median_and_hover_data_per_line() -> None:
    line = TrendLine(label="gemm m=1024", unit="us", points=points([100.0, 101.0, 110.0]))
    fig = trend_figure([line], metric="duration")
    q1, q3, median, baseline = fig.data
    assert list(median.y) == [100.0, 101.0, 110.0]
    assert list(baseline.y) == [101.0, 101.0] and baseline.line.dash == "dash"
    assert baseline.x == (median.x[0], median.x[-1]) and baseline.showlegend is False
    assert list(q1.y) == pytest.approx([99.0, 99.99, 108.9])
    assert q3.fill == "tonexty" and q1.hoverinfo == "skip" and q3.hoverinfo == "skip"
    assert median.name == "gemm m=1024" and q1.legendgroup == median.legendgroup
    sha7, author, date, subject, value, *_quartiles, full, change = median.customdata[2]
    assert (sha7, author, subject, value) == ("3" * 10, "Ada", "commit 2", "110 us")
    assert date == "2026-11-01 00:02 UTC" and full == "3" * 40 and change == ""
    assert "%{customdata[4]}" in median.hovertemplate
    assert fig.layout.yaxis.title.text == "duration (us) · lower is better"
    assert fig.layout.yaxis.type == "linear"
    assert fig.layout.meta["median_traces"] == [2]
    assert not fig.layout.xaxis.title.text  # dates need no title, and it met the legend


def test_trend_log_scale_and_several_lines() -> None:
    lines = [
        TrendLine(label=f"k{i}", unit="us", points=points([10.0 * (i + 1)] * 4)) for i in range(3)
    ]
    fig = trend_figure(lines, metric="duration", log_y=True)
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.meta["median_traces"] == [2, 5, 8]
    colours = {fig.data[i].line.color for i in fig.layout.meta["median_traces"]}
    assert len(colours) == 3


def test_trend_marks_change_points_and_alerts_at_their_commits() -> None:
    pts = points([100.0, 100.0, 100.0, 110.0, 110.0, 110.0])
    outside = T0 - timedelta(days=1)
    markers = [
        TrendMarker("change_point", pts[3].sha, pts[3].committed_at, "change point +10.0%", 110.0),
        TrendMarker("alert", pts[3].sha, pts[3].committed_at, "alert #1 (open)"),
        # Before every commit shown: no place on a commit axis, dropped.
        TrendMarker("change_point", "f" * 40, outside, "older", 100.0),
        TrendMarker("alert", "e" * 40, outside, "older alert"),
        # A commit between two shown (this series has no point there): between them, at its
        # own level.
        TrendMarker(
            "change_point", "d" * 40, pts[1].committed_at + timedelta(seconds=1), "between", 100.0
        ),
    ]
    fig = trend_figure([TrendLine("k", "us", pts, markers)], metric="duration")
    by_name = {t.name: t for t in fig.data}
    cps, alerts = by_name["change points"], by_name["alerts"]
    assert cps.meta == {"series": "k"} and cps.showlegend and alerts.showlegend
    assert list(cps.x) == [3, 1.5] and list(cps.y) == [110.0, 100.0]
    assert cps.marker.symbol == "diamond-open"
    # The ✕ of an alert at a change point sits above the ◇, both visible.
    assert list(alerts.x) == [3] and alerts.marker.symbol == "x"
    assert 110.0 < alerts.y[0] < 112.0
    assert "alert #1 (open)" in alerts.text[0] and pts[3].sha[:10] in alerts.text[0]


def test_trend_of_nothing_is_an_empty_figure() -> None:
    fig = trend_figure([], metric="duration")
    assert fig.data == () and fig.layout.yaxis.title.text == "duration"


def test_trend_markers_are_drawn_above_every_line() -> None:
    """Plotly draws traces in order: the markers of the first series come after the last
    series' band and median, so no later line covers them."""
    pts = points([100.0, 110.0])
    marked = TrendLine("a", "us", pts, [TrendMarker("alert", pts[1].sha, pts[1].committed_at,
                                                    "alert #1 (open)")])  # fmt: skip
    fig = trend_figure([marked, TrendLine("b", "us", points([105.0, 106.0]))], metric="duration")
    names = [t.name for t in fig.data]
    assert names.index("alerts") > max(names.index(n) for n in ("b", "b q1", "b q3"))
    assert fig.layout.meta["median_traces"] == [2, 5]


def test_long_labels_are_cut_in_the_legend_and_whole_in_the_hover() -> None:
    label = "train_step batch=256 d_hidden=4096 d_in=1024 d_out=1024 p_drop=0.1 · train_step"
    fig = trend_figure([TrendLine(label, "us", points([1.0, 2.0]))], metric="duration")
    median = fig.data[2]
    assert len(median.name) == LEGEND_CHARS and median.name.endswith("· train_step")
    # whole in the hover, in lines a phone's screen holds
    shown = median.hovertemplate.split("</b>")[0].removeprefix("<b>")
    assert "…" in median.name and shown.replace("<br>", " ") == label
    assert max(len(line) for line in shown.split("<br>")) <= 36
    assert short_label("gemm m=1024") == "gemm m=1024"


def test_the_baseline_level_starts_at_the_newest_change_point() -> None:
    pts = points([100.0, 100.0, 100.0, 130.0, 131.0, 129.0])
    shift = TrendMarker("change_point", pts[3].sha, pts[3].committed_at, "+30%", 130.0)
    start, end, level = baseline_level(TrendLine("k", "us", pts, [shift]))
    assert (start, end, level) == (pts[3].sha, pts[-1].sha, 130.0)
    assert baseline_level(TrendLine("k", "us", pts))[2] == 114.5  # no change point: all six
    assert baseline_level(TrendLine("k", "us", [])) is None


def test_no_baselines_for_a_crowd_of_lines_and_levels_under_the_markers() -> None:
    pts = points([1.0, 2.0])
    many = [TrendLine(f"k{i}", "us", pts) for i in range(BASELINE_LINES_MAX + 1)]
    fig = trend_figure(many, metric="duration")
    assert not any(t.name.endswith(": baseline") for t in fig.data)
    alert = TrendMarker("alert", pts[1].sha, pts[1].committed_at, "alert #1")
    fig = trend_figure([TrendLine("a", "us", pts, [alert])], metric="duration")
    names = [t.name for t in fig.data]
    assert names.index("a: baseline") < names.index("alerts")
    assert trend_figure([TrendLine("a", "byte", pts)], metric="dram").layout.yaxis.title.text == (
        "dram (byte)"
    )


def test_one_legend_entry_per_marker_kind_whatever_series_it_marks() -> None:
    pts = points([1.0, 2.0])
    when = pts[1].committed_at
    lines = [
        TrendLine(name, "us", pts, [TrendMarker("alert", pts[1].sha, when, f"alert of {name}")])
        for name in "ab"
    ]
    alerts = [t for t in trend_figure(lines, metric="duration").data if t.name == "alerts"]
    assert [t.showlegend for t in alerts] == [True, False]
    assert [t.meta["series"] for t in alerts] == ["a", "b"]


def test_relative_trend_draws_each_series_as_its_change_from_its_first_level() -> None:
    """A 600 us step and a 100 us jump of +14.5% share one axis: each reads as its change."""
    big = points([580.0, 582.0, 578.0, 581.0, 580.0])
    small = points([100.0, 100.0, 114.5, 114.5, 114.5])
    step = TrendMarker("change_point", small[2].sha, small[2].committed_at, "+14.5%", 114.5)
    lines = [TrendLine("train_step", "us", big), TrendLine("gemm_fwd", "us", small, [step])]
    fig = trend_figure(lines, metric="duration", relative=True)
    first, second = (fig.data[i] for i in fig.layout.meta["median_traces"])
    assert fig.layout.meta["scale"] == "change"
    assert list(second.y) == pytest.approx([0.0, 0.0, 0.145, 0.145, 0.145])
    assert max(abs(y) for y in first.y) < 0.004  # 580 us, the level of its five medians
    assert "+14.5% from the first level (100 us)" in second.customdata[2][8]
    low, high = fig.layout.yaxis.range
    assert low <= -0.02 and 0.145 < high < 0.2 and fig.layout.yaxis.tickformat == "+.1%"
    assert fig.layout.yaxis.title.text == "duration change from first level · lower is better"
    # The baseline level since the step, on the same scale.
    (level,) = [t for t in fig.data if t.name == "gemm_fwd: baseline"]
    assert list(level.y) == pytest.approx([0.145, 0.145]) and list(level.x) == [2, 4]


def test_noise_on_a_change_axis_is_drawn_against_the_tightest_class_target() -> None:
    """±0.1% of noise does not fill the axis: it spans at least ±2%, ticks a tenth apart."""
    fig = trend_figure([TrendLine("k", "us", points([100.0, 99.9, 100.1, 100.0]))],
                       metric="duration", relative=True)  # fmt: skip
    low, high = fig.layout.yaxis.range
    assert low < -0.02 and high > 0.02 and high - low < 0.05


def test_a_line_with_no_positive_level_or_a_log_axis_is_drawn_in_values() -> None:
    zero = TrendLine("spills", "byte", points([0.0, 0.0, 64.0]))
    assert trend_figure([zero], metric="spill", relative=True).layout.meta["scale"] == "value"
    fig = trend_figure([TrendLine("k", "us", points([1.0, 2.0]))], metric="duration",
                       relative=True, log_y=True)  # fmt: skip
    assert fig.layout.meta["scale"] == "value" and fig.layout.yaxis.type == "log"


def test_x_is_the_commit_order_of_every_line_together() -> None:
    """One step per commit whatever the time between them; a line missing a commit skips it."""
    pts = points([1.0, 2.0, 3.0, 4.0])
    spaced = [
        TrendPoint(p.sha, T0 + timedelta(days=7 * i), p.author, p.subject, p.median, p.q1, p.q3)
        for i, p in enumerate(pts)
    ]
    lines = [TrendLine("a", "us", spaced), TrendLine("b", "us", [spaced[0], spaced[3]])]
    fig = trend_figure(lines, metric="duration")
    a, b = (fig.data[i] for i in fig.layout.meta["median_traces"])
    assert list(a.x) == [0, 1, 2, 3] and list(b.x) == [0, 3]
    assert fig.layout.meta["commits"] == [p.sha for p in spaced]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3]
    assert list(fig.layout.xaxis.ticktext) == [p.sha[:10] for p in spaced]
    many = TrendLine("m", "us", points([1.0] * 45))
    ticks = trend_figure([many], metric="duration").layout.xaxis.tickvals
    assert len(ticks) <= 10 and ticks[0] == 0


def test_the_commit_a_marker_names_is_labelled_though_labels_are_spaced() -> None:
    """45 commits, every fifth labelled: the change point's commit (index 23) and the alert's
    (31) are labelled too, and the regular labels right beside them are dropped."""
    pts = points([1.0] * 23 + [1.2] * 22)
    shift = TrendMarker("change_point", pts[23].sha, pts[23].committed_at, "change point")
    alert = TrendMarker("alert", pts[31].sha, pts[31].committed_at, "#3")
    fig = trend_figure([TrendLine("m", "us", pts, [shift, alert])], metric="duration")
    ticks = list(fig.layout.xaxis.tickvals)
    assert {23, 31} <= set(ticks)
    assert dict(zip(ticks, fig.layout.xaxis.ticktext, strict=True))[23] == pts[23].sha[:10]
    assert not {22, 24, 30, 32} & set(ticks)  # none crowding them
    assert min(b - a for a, b in itertools.pairwise(ticks)) >= 2


def test_an_alert_at_an_unmeasured_commit_sits_at_the_next_point() -> None:
    """A bisection moved the alert to a commit of the push the series has no point at: the ✕
    goes between the points, at the level where its effect was measured."""
    pts = points([100.0, 100.0, 108.0])
    moved = TrendMarker("alert", "e" * 40, pts[1].committed_at + timedelta(seconds=30), "#1")
    fig = trend_figure([TrendLine("k", "us", pts, [moved])], metric="duration")
    (alerts,) = [t for t in fig.data if t.name == "alerts"]
    assert list(alerts.x) == [1.5] and 108.0 < alerts.y[0] < 109.0

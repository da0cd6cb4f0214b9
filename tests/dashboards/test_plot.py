"""Tests of dashboards.plot, the plotly building blocks of the figure builders: the house layout
(font, margins, left-aligned hover labels, extras added or overriding), traces and figures built
without plotly's per-value validation, arrays set onto the indexed traces after the figure is
built, and the change axis floor being the tightest class target the analysis uses."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from dashboards.plot import CHANGE_FLOOR, FONT, bar, layout, new_figure, scatter
from service.analysis.verdicts import class_target


def test_the_house_layout() -> None:
    got = layout()
    assert got["font"] == FONT
    assert got["margin"] == {"l": 70, "r": 20, "t": 30, "b": 50}
    # multi-line hover text (wrapped tooltips) reads badly centred
    assert got["hoverlabel"] == {"align": "left"}


def test_layout_extras_are_added_and_override_the_house_values() -> None:
    got = layout(title={"text": "changes"}, margin={"l": 200}, hoverlabel={"namelength": -1})
    assert got["title"] == {"text": "changes"}
    # replaced whole, not merged: a builder that passes margins passes all it wants
    assert got["margin"] == {"l": 200}
    assert got["hoverlabel"] == {"namelength": -1}
    assert got["font"] == FONT


def test_traces_are_not_validated() -> None:
    # plotly would reject the mode; the builders skip that check for speed
    with pytest.raises(ValueError):
        go.Scatter(mode="no such mode")
    assert scatter(mode="no such mode").mode == "no such mode"
    assert bar(orientation="diagonal").orientation == "diagonal"


def test_new_figure_keeps_the_traces_in_order_with_the_layout() -> None:
    fig = new_figure([bar(name="a"), scatter(name="b")], layout(height=321))
    assert [(t.type, t.name) for t in fig.data] == [("bar", "a"), ("scatter", "b")]
    assert fig.layout.height == 321
    assert fig.layout.margin.l == 70


def test_new_figure_sets_arrays_on_the_indexed_traces_only() -> None:
    xs, ys = list(range(200)), [i * 0.5 for i in range(200)]
    fig = new_figure(
        [scatter(name="first", x=[0]), scatter(name="second"), bar(name="third", y=[9])],
        layout(),
        {1: {"x": xs, "y": ys}, 2: {"customdata": ["c"]}},
    )
    assert list(fig.data[1].x) == xs and list(fig.data[1].y) == ys
    assert list(fig.data[2].customdata) == ["c"]
    # the traces not named keep what they were built with
    assert list(fig.data[0].x) == [0] and fig.data[0].y is None
    assert list(fig.data[2].y) == [9]


def test_new_figure_without_arrays() -> None:
    fig = new_figure([scatter(x=[1, 2])], layout())
    assert list(fig.data[0].x) == [1, 2]


def test_the_change_floor_is_the_tightest_class_target() -> None:
    tightest = min(class_target(us) for us in (0.1, 5.0, 20.0, 50.0, 1e6))
    assert tightest == CHANGE_FLOOR

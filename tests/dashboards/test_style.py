"""Tests of dashboards.style: the verdict order (worst first, as the overview's stacked bars and
the badges list them), one distinct colour per verdict with a neutral fallback for an unknown
or missing one, the eight distinct trend-line colours, and `rgba`, which turns a "#rrggbb"
colour into the CSS rgba() of a translucent band."""

from __future__ import annotations

import re

import pytest

from dashboards.style import LINE_COLOURS, VERDICT_COLOURS, VERDICT_ORDER, rgba, verdict_colour

HEX = re.compile(r"#[0-9a-fA-F]{6}")
FALLBACK = "#bdbdbd"


def test_verdict_order_is_worst_first() -> None:
    assert VERDICT_ORDER == (
        "regressed",
        "broken",
        "missing",
        "improved",
        "pending",
        "new",
        "unchanged",
    )


def test_every_verdict_has_its_own_colour() -> None:
    assert set(VERDICT_COLOURS) == set(VERDICT_ORDER)
    assert len(set(VERDICT_COLOURS.values())) == len(VERDICT_COLOURS)
    assert all(HEX.fullmatch(c) for c in VERDICT_COLOURS.values())


def test_verdict_colour_of_a_known_verdict() -> None:
    assert verdict_colour("regressed") == "#d62728"
    assert verdict_colour("improved") == "#2ca02c"


@pytest.mark.parametrize("verdict", [None, "", "learning", "Regressed"])
def test_an_unknown_or_missing_verdict_gets_a_neutral_grey(verdict: str | None) -> None:
    assert verdict_colour(verdict) == FALLBACK
    # the fallback must not pass for a real verdict on a chart
    assert FALLBACK not in VERDICT_COLOURS.values()


def test_there_are_eight_distinct_line_colours() -> None:
    assert len(LINE_COLOURS) == 8
    assert len({c.lower() for c in LINE_COLOURS}) == 8
    assert all(HEX.fullmatch(c) for c in LINE_COLOURS)


def test_rgba_reads_the_hex_pairs_as_red_green_blue() -> None:
    assert rgba("#d62728", 0.5) == "rgba(214,39,40,0.5)"
    assert rgba("#0072B2", 0.15) == "rgba(0,114,178,0.15)"


def test_rgba_accepts_a_colour_without_the_hash() -> None:
    assert rgba("ffffff", 1) == "rgba(255,255,255,1)"

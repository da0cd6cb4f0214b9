"""Tests of dashboards.format, the formatting behind the pages' Jinja filters and the figures'
hover text: the dash shown for a missing or non-finite value, four significant digits with a
switch to scientific notation outside [1e-3, 1e6), microsecond durations rescaled to the largest
of s/ms/us/ns they reach, signed percentages, fractions of a peak and capped shares, tooltips
wrapped to a width and a line count, the short sha and commit subject, and series labels in
their page form and their compact form (a 140-character commit status)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from dashboards.format import (
    FILTERS,
    fmt_fraction,
    fmt_number,
    fmt_pct,
    fmt_share,
    fmt_time,
    fmt_value,
    params_label,
    series_label,
    short_sha,
    subject,
    wrapped,
)

DASH = "–"


@pytest.mark.parametrize("value", [None, math.inf, -math.inf, math.nan])
def test_missing_or_non_finite_numbers_read_as_a_dash(value: float | None) -> None:
    # a NaN from an empty baseline must not reach a page as "nan%"
    assert fmt_number(value) == DASH
    assert fmt_pct(value) == DASH
    assert fmt_fraction(value) == DASH


def test_a_missing_value_time_or_share_reads_as_a_bare_dash() -> None:
    # no unit after the dash: "– us" would suggest a measurement
    assert fmt_value(None, "us") == DASH
    assert fmt_share(None) == DASH and fmt_share(math.nan) == DASH
    assert fmt_time(None) == DASH


def test_fmt_number_keeps_significant_digits_in_the_plain_range() -> None:
    assert fmt_number(3.14159) == "3.142"
    assert fmt_number(999.94) == "999.9"
    assert fmt_number(0.0012345) == "0.001234"
    assert fmt_number(3.14159, 2) == "3.1"


def test_zero_is_plain_even_though_it_is_below_a_thousandth() -> None:
    assert fmt_number(0.0) == "0"
    assert fmt_number(-0.0) == "0"


def test_fmt_number_turns_scientific_at_one_million_and_below_one_thousandth() -> None:
    assert fmt_number(1e6) == "1.000e+06"
    assert fmt_number(2.5e7) == "2.500e+07"
    assert fmt_number(1.234e8, 2) == "1.2e+08"
    # with enough digits asked for, a value just under a million is still written out
    assert fmt_number(999_999.0, 7) == "999999"
    assert fmt_number(123_456.0, 7) == "123456"
    # 1e-3 itself is still plain; just below it is not
    assert fmt_number(1e-3) == "0.001"
    assert fmt_number(9.99e-4) == "9.990e-04"
    assert fmt_number(-5e-4) == "-5.000e-04"


@pytest.mark.parametrize(
    ("microseconds", "shown"),
    [
        (2.5e6, "2.5 s"),
        (1e6, "1 s"),
        (999_000.0, "999 ms"),
        (1000.0, "1 ms"),
        (999.0, "999 us"),
        (1.0, "1 us"),
        (0.999, "999 ns"),
        (0.0005, "0.5 ns"),
        (-1500.0, "-1.5 ms"),
    ],
)
def test_durations_in_microseconds_take_the_largest_unit_they_reach(
    microseconds: float, shown: str
) -> None:
    assert fmt_value(microseconds, "us") == shown


def test_zero_duration_falls_through_to_nanoseconds() -> None:
    # ns is the catch-all step: nothing is smaller
    assert fmt_value(0.0, "us") == "0 ns"


def test_units_other_than_microseconds_are_shown_as_stored() -> None:
    # 1234.4 ms is not promoted to seconds: only "us" is rescaled
    assert fmt_value(1234.4, "ms") == "1234 ms"
    assert fmt_value(87.5, "%") == "87.5 %"
    assert fmt_value(3.0, "") == "3"


def test_fmt_pct_is_signed_even_for_no_change() -> None:
    assert fmt_pct(0.0) == "+0.0%"
    assert fmt_pct(-0.125) == "-12.5%"
    assert fmt_pct(1.5) == "+150.0%"
    assert fmt_pct(0.25, digits=2) == "+25.00%"


def test_fmt_fraction_keeps_two_significant_digits_below_a_thousandth() -> None:
    assert fmt_fraction(0.4567) == "45.7%"
    assert fmt_fraction(0.001) == "0.1%"
    # one decimal would round these to "0.0%": a tiny fraction of peak still shows its size
    assert fmt_fraction(0.0004) == "0.04%"
    assert fmt_fraction(0.000123) == "0.012%"
    assert fmt_fraction(0.0) == "0%"


def test_fmt_share_is_approximate_and_capped_at_all_of_the_slowdown() -> None:
    assert fmt_share(0.8) == "≈ 80%"
    assert fmt_share(1.0) == "≈ 100%"
    # an estimate above the whole slowdown must not read as "≈ 170%"
    assert fmt_share(1.7) == "≈ 100%"
    assert fmt_share(math.inf) == "≈ 100%"


def test_fmt_time_shows_minutes_without_rounding_the_seconds() -> None:
    assert fmt_time(datetime(2024, 3, 5, 7, 9, 59, tzinfo=UTC)) == "2024-03-05 07:09 UTC"


def test_short_sha_subject_and_params_label() -> None:
    assert short_sha("0123456789abcdef0123") == "0123456789"
    assert short_sha("abc") == "abc"
    assert short_sha(None) == ""
    assert subject("speed up the epilogue\n\nlong body\nmore") == "speed up the epilogue"
    assert subject(None) == ""
    # parameters keep their insertion order, so a legend reads like the suite file
    assert params_label({"n": 8, "m": 4, "act": "relu"}) == "n=8 m=4 act=relu"
    assert params_label(None) == ""


def test_wrapped_leaves_short_text_alone() -> None:
    assert wrapped("short text") == "short text"
    assert wrapped("") == ""


def test_wrapped_keeps_exactly_the_allowed_number_of_lines_without_a_cut() -> None:
    assert wrapped("alpha beta gamma delta", width=11, lines=2) == "alpha beta<br>gamma delta"


def test_wrapped_cuts_the_last_line_with_an_ellipsis_when_more_is_left() -> None:
    got = wrapped("alpha beta gamma delta epsilon", width=11, lines=2)
    assert got == "alpha beta<br>gamma delt…"


def test_wrapped_breaks_words_longer_than_the_width() -> None:
    assert wrapped("x" * 25, width=10) == "x" * 10 + "<br>" + "x" * 10 + "<br>" + "x" * 5
    assert wrapped("x" * 35, width=10).split("<br>")[-1] == "x" * 9 + "…"


@pytest.mark.parametrize(("width", "lines"), [(5, 1), (12, 2), (40, 3), (17, 4)])
def test_wrapped_never_exceeds_its_width_or_line_count(width: int, lines: int) -> None:
    text = " ".join(f"kernel_{i}" * (1 + i % 3) for i in range(30))
    got = wrapped(text, width=width, lines=lines).split("<br>")
    assert len(got) == lines
    assert all(len(line) <= width for line in got)
    assert got[-1].endswith("…")


def test_series_label_names_the_kernel_only_where_it_differs_from_the_workload() -> None:
    params = {"rows": 4096, "cols": 128}
    assert series_label("softmax", params, "softmax_warp") == (
        "softmax rows=4096 cols=128 · softmax_warp"
    )
    for kernel in ("softmax", "", None):
        assert series_label("softmax", params, kernel) == "softmax rows=4096 cols=128"
    assert series_label("softmax", {}, None) == "softmax"


def test_compact_label_writes_equal_sizes_as_a_power() -> None:
    assert series_label("gemm", {"m": 512, "n": 512}, None, compact=True) == "gemm 512²"
    # an integral float counts as the same size
    assert series_label("gemm", {"m": 64, "n": 64.0, "k": 64}, None, compact=True) == "gemm 64³"


def test_compact_label_joins_unequal_or_single_sizes_with_a_times_sign() -> None:
    label = series_label("conv", {"h": 224, "w": 224, "c": 3}, "implicit_gemm", compact=True)
    assert label == "conv 224×224×3 implicit_gemm"
    assert series_label("scale", {"alpha": 0.5}, None, compact=True) == "scale 0.5"


def test_compact_label_has_no_superscript_beyond_nine_equal_sizes() -> None:
    params = {f"d{i}": 2 for i in range(10)}
    assert series_label("tensor", params, None, compact=True) == "tensor " + "×".join(["2"] * 10)


def test_compact_label_names_flags_and_lists_but_leaves_strings_bare() -> None:
    params = {"n": 8, "causal": False, "mask": None, "shape": [2, 3], "dtype": "bf16"}
    got = series_label("attention", params, None, compact=True)
    # a bool is not a size, though Python counts it as an int
    assert got == "attention 8 causal=false mask=none shape=2,3 bf16"


def test_compact_label_does_not_repeat_a_kernel_already_named() -> None:
    assert series_label("saxpy", {"n": 4096}, "saxpy", compact=True) == "saxpy 4096"
    assert series_label("act", {"kind": "silu"}, "silu", compact=True) == "act silu"


def test_the_template_filters_are_these_functions() -> None:
    # the templates call them by these names: a rename breaks a page, not an import
    by_name = {
        "num": fmt_number,
        "value": fmt_value,
        "pct": fmt_pct,
        "fraction": fmt_fraction,
        "share": fmt_share,
        "time": fmt_time,
        "sha": short_sha,
        "subject": subject,
        "params": params_label,
    }
    assert by_name == FILTERS

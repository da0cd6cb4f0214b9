"""Tests of dashboards.model, the plain frozen dataclasses the figure builders take. They have no
behaviour beyond their fields, so what is pinned is what callers rely on without passing it:
the optional fields' defaults (no marker value, no hover text, no class target, fresh empty
marker and bisection containers that instances do not share) and that an instance cannot be
changed after a builder received it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from dashboards.model import ChangeBar, TrendLine, TrendMarker, TrendPoint, VerdictColumn

AT = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)


def test_optional_fields_default_to_nothing_and_containers_are_not_shared() -> None:
    marker = TrendMarker("alert", "abc", AT, "slower")
    assert marker.value is None
    bar = ChangeBar("gemm", 0.03, "regressed")
    assert (bar.hover, bar.target) == ("", None)

    one, other = TrendLine("a", "us", []), TrendLine("b", "us", [])
    assert one.markers == [] and one.markers is not other.markers
    first, second = VerdictColumn("abc", "r1", {}), VerdictColumn("def", "r2", {})
    assert first.bisected == {} and first.bisected is not second.bisected


def test_instances_are_frozen() -> None:
    point = TrendPoint("abc", AT, "A. Author", "subject", 1.0, 0.9, 1.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.median = 2.0  # type: ignore[misc]

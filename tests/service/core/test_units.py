"""The units of service/core/units.py: the time units a timing may be given in and their factor
to microseconds, and the Nsight Compute units (base units and quotients of two) that a result
document's ncu metrics may carry; anything else is unknown."""

from __future__ import annotations

import pytest

from service.core.units import TIME_UNITS, is_known_unit, to_microseconds_factor


@pytest.mark.parametrize(("unit", "factor"), [("ns", 1e-3), ("us", 1.0), ("ms", 1e3), ("s", 1e6)])
def test_each_time_unit_converts_to_microseconds(unit: str, factor: float) -> None:
    assert to_microseconds_factor(unit) == pytest.approx(factor, rel=1e-12)


def test_a_unit_that_is_no_time_has_no_factor() -> None:
    # The document's validator refuses such a unit first; reaching here would be a bug.
    with pytest.raises(KeyError):
        to_microseconds_factor("cycle")


def test_the_time_units_are_exactly_the_four_a_timing_may_use() -> None:
    assert set(TIME_UNITS) == {"ns", "us", "ms", "s"}


@pytest.mark.parametrize(
    "unit", ["byte", "Gbyte/second", "byte/block", "inst/warp", "%", "", "cycle/usecond", "ms"]
)
def test_base_units_and_quotients_of_two_are_known(unit: str) -> None:
    assert is_known_unit(unit)


@pytest.mark.parametrize(
    "unit",
    [
        "furlong",  # no base unit
        "Byte",  # units are case-sensitive, as ncu writes them
        "byte/furlong",  # a quotient of an unknown unit
        "byte/block/warp",  # three parts: no compound goes that deep
        "byte/",  # an empty denominator, though "" alone is the dimensionless unit
        "/second",
        "/",
    ],
)
def test_anything_else_is_unknown(unit: str) -> None:
    assert not is_known_unit(unit)

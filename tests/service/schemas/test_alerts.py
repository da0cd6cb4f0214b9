"""The alert bodies of service/schemas/alerts.py: a triage (one alert's, or a group's together)
moves to one of the triage states only, with a note of at most 5000 characters and an actor of
1 to 200, nothing else, and no text a database cannot store; a group names 1 to 1000 alert ids,
each a positive 32-bit id. The answers' defaults and the fraction their changes are given in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from service.models.alert import TRIAGE_STATES
from service.schemas.alerts import AlertGroupTriage, AlertPatch, AlertPublic, CompareRow
from service.schemas.metrics import SeriesPublic

NOW = datetime(2026, 11, 1, tzinfo=UTC)
SERIES = SeriesPublic(
    id=1, repository="acme/kernels", suite="s", workload="gemm", params={"m": 1}, kernel="k",
    metric="duration", unit="us", method="cuda_events", fingerprint="00000000000000aa",
)  # fmt: skip


def refused(model: type, **body: object) -> list[tuple]:
    with pytest.raises(ValidationError) as error:
        model.model_validate(body)
    return [e["loc"] for e in error.value.errors()]


@pytest.mark.parametrize("state", TRIAGE_STATES)
def test_an_alert_moves_to_each_triage_state_by_admin_by_default(state: str) -> None:
    patch = AlertPatch(state=state)
    assert (patch.state, patch.note, patch.actor) == (state, "", "admin")


@pytest.mark.parametrize("state", ["suspected", "dismissed", "closed"])
def test_the_confirmations_states_and_unknown_ones_are_no_triage(state: str) -> None:
    # Suspected waits for a confirmation job and dismissed is its outcome: no person sets them.
    assert refused(AlertPatch, state=state) == [("state",)]


def test_a_note_of_5000_characters_is_taken_and_one_more_is_not() -> None:
    assert len(AlertPatch(state="open", note="n" * 5000).note) == 5000
    assert refused(AlertPatch, state="open", note="n" * 5001) == [("note",)]


def test_the_actor_has_between_one_and_200_characters() -> None:
    assert AlertPatch(state="open", actor="a" * 200).actor == "a" * 200
    assert refused(AlertPatch, state="open", actor="") == [("actor",)]
    assert refused(AlertPatch, state="open", actor="a" * 201) == [("actor",)]


def test_a_triage_with_another_field_is_refused() -> None:
    assert refused(AlertPatch, state="fixed", fixed_by_commit="a" * 40) == [("fixed_by_commit",)]


def test_a_note_that_cannot_be_stored_is_refused_saying_where() -> None:
    with pytest.raises(ValidationError, match=r"cannot be stored: \$\.note: a NUL character"):
        AlertPatch.model_validate({"state": "acknowledged", "note": "seen\x00"})


def test_a_group_triage_takes_1_to_1000_positive_32_bit_ids() -> None:
    assert AlertGroupTriage(alert_ids=[1, 2**31 - 1], state="invalid").alert_ids == [1, 2**31 - 1]
    assert len(AlertGroupTriage(alert_ids=list(range(1, 1001)), state="open").alert_ids) == 1000
    assert refused(AlertGroupTriage, alert_ids=[], state="open") == [("alert_ids",)]
    assert refused(AlertGroupTriage, alert_ids=list(range(1, 1002)), state="open") == [
        ("alert_ids",)
    ]


@pytest.mark.parametrize(("bad", "index"), [([0], 0), ([5, 2**31], 1), ([3, -1], 1)])
def test_a_group_triage_refuses_an_id_no_alert_can_have(bad: list[int], index: int) -> None:
    assert refused(AlertGroupTriage, alert_ids=bad, state="open") == [("alert_ids", index)]


def test_a_group_triage_refuses_what_a_single_one_does() -> None:
    assert refused(AlertGroupTriage, alert_ids=[1], state="suspected", note="x" * 5001) == [
        ("state",),
        ("note",),
    ]
    assert refused(AlertGroupTriage, alert_ids=[1], state="open", actor="") == [("actor",)]


def test_an_alert_answer_without_bisection_or_events_has_them_empty() -> None:
    alert = AlertPublic(
        id=1, state="open", summary="k: +12%", change=0.12, confirmed_change=None, series=SERIES,
        branch="main", commit="c" * 40, base_commit=None, first_bad_commit=None,
        fixed_by_commit=None, confirm_job_id=None, attribution={}, note="", updated_by="service",
        created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    assert (alert.bisect, alert.events) == ({}, [])


def test_changes_are_documented_as_fractions() -> None:
    # The pages show percentages; a client of the API must read 0.05 as +5%.
    schema = CompareRow.model_json_schema()["properties"]
    assert "0.05 is +5%" in schema["change"]["description"]
    assert "0.05 is 5%" in schema["floor"]["description"]
    assert "0.05 is +5%" in AlertPublic.model_json_schema()["properties"]["change"]["description"]


def test_a_compare_row_has_no_floor_and_no_alert_unless_given() -> None:
    row = CompareRow(
        series=SERIES, base_median=10.0, head_median=11.0, change=0.1, p_value=0.001,
        q_value=0.004, significant=True,
    )  # fmt: skip
    assert (row.floor, row.alert) == (0.0, None)

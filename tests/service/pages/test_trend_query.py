"""The trends page's choices (service.pages.trend_query), all of which live in the URL: a query
string that names each value of a list once, a flag only when set (as 1) and nothing for a
choice left open, any choice overridable for a link; blank choices from a form read as none; and
through a real server, the bounds the query declares (a series id, the points per series)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import httpx
import pytest

from service.pages.trend_query import TrendQuery, trend_query
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer


def test_the_query_string_repeats_lists_and_leaves_open_choices_out() -> None:
    q = TrendQuery(repository="acme/kernels", workload=["gemm_fwd", "train_step"], series=[3])
    assert parse_qsl(q.query_string()) == [
        ("repository", "acme/kernels"),
        ("metric", "duration"),
        ("workload", "gemm_fwd"),
        ("workload", "train_step"),
        ("series", "3"),
        ("points", "200"),
    ]


def test_a_flag_is_written_only_when_set_and_any_choice_can_be_overridden() -> None:
    q = TrendQuery(log=True, scale="value")
    assert ("log", "1") in parse_qsl(q.query_string())
    # A link that switches the axis back keeps every other choice.
    switched = dict(parse_qsl(q.query_string(log=False, scale="change", branch="dev")))
    assert "log" not in switched
    assert (switched["scale"], switched["branch"]) == ("change", "dev")
    assert q.log is True and q.branch is None  # the override left the query as it was


def test_blank_choices_from_a_form_are_no_choice() -> None:
    q = trend_query(
        repository="", branch="", metric="duration", workload=["", "gemm_fwd"], kernel=[""],
        fingerprint="", series=[], points=200, log=False, scale=None,
    )  # fmt: skip
    assert (q.repository, q.branch, q.fingerprint) == (None, None, None)
    assert (q.workload, q.kernel) == (["gemm_fwd"], [])


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


@pytest.mark.parametrize("query", ["points=1", "points=1001", "series=0", "scale=median"])
def test_a_choice_out_of_its_bounds_is_a_422(client: httpx.Client, query: str) -> None:
    answer = client.get(f"/trends.json?{query}")
    assert answer.status_code == 422, answer.text
    assert query.split("=")[0] in answer.json()["detail"]

"""GET /api/v1/compare (service.api.routes.compare) over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

A, B, Z = sha_for("a"), sha_for("b"), sha_for("z")


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, doc: dict) -> None:
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


def measure(client: httpx.Client) -> None:
    """a, then b: k1 30% slower (an alert at b), k2 the same, `gone` dropped, `new` added; z in
    acme/other."""
    post(client, document(commit="a", medians={"k1": 100.0, "k2": 100.0, "gone": 50.0}))
    post(client, document(commit="b", parents=["a"], ancestors=["a"], minutes=10, seed=1,
                          medians={"k1": 130.0, "k2": 100.0, "new": 20.0}))  # fmt: skip
    post(client, document(commit="z", repository="acme/other", medians={"k1": 1.0}))


def compare(client: httpx.Client, **query: object) -> dict:
    answer = client.get("/api/v1/compare", params=query)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_every_series_of_both_commits_is_a_row_significant_ones_first(
    client: httpx.Client,
) -> None:
    measure(client)
    found = compare(client, base=A[:7], head=B[:7])
    assert (found["base"], found["head"], found["repository"]) == (A, B, "acme/kernels")
    k1, k2 = found["rows"]
    assert (k1["series"]["kernel"], k2["series"]["kernel"]) == ("k1", "k2")
    assert k1["base_median"] == pytest.approx(100.0, rel=0.01)
    assert k1["head_median"] == pytest.approx(130.0, rel=0.01)
    assert k1["change"] == pytest.approx(0.30, abs=0.01)
    assert k1["significant"] is True and k1["floor"] == pytest.approx(0.01)
    assert 0 <= k1["p_value"] <= k1["q_value"] <= 0.01
    assert k2["change"] == pytest.approx(0.0, abs=0.01) and k2["significant"] is False
    # The alert the head opened is named beside its series' row.
    assert k1["alert"]["state"] == "suspected"
    assert k1["alert"]["summary"].startswith("gemm_fwd 1024³ k1 +30.0%")
    assert k2["alert"] is None
    assert [s["kernel"] for s in found["only_in_base"]] == ["gone"]
    assert [s["kernel"] for s in found["only_in_head"]] == ["new"]


def test_base_and_head_swapped_the_change_turns_and_no_alert_is_at_the_head(
    client: httpx.Client,
) -> None:
    measure(client)
    back = compare(client, base=B, head=A)
    k1 = back["rows"][0]
    assert k1["series"]["kernel"] == "k1" and k1["significant"] is True
    assert k1["change"] == pytest.approx(100 / 130 - 1, abs=0.01)
    assert [r["alert"] for r in back["rows"]] == [None, None]
    assert [s["kernel"] for s in back["only_in_base"]] == ["new"]
    same = compare(client, base=A, head=A)
    assert {(r["change"], r["significant"]) for r in same["rows"]} == {(0.0, False)}
    assert same["only_in_base"] == same["only_in_head"] == []


def test_the_repository_chooses_between_commits_of_one_sha(client: httpx.Client) -> None:
    measure(client)
    post(client, document(commit="a", repository="acme/other", medians={"k1": 1.0}))
    ambiguous = client.get("/api/v1/compare", params={"base": A, "head": B})
    assert ambiguous.status_code == 400
    assert {c["repository"] for c in ambiguous.json()["candidates"]} == {
        "acme/kernels", "acme/other"
    }  # fmt: skip
    found = compare(client, base=A, head=B, repository="acme/kernels")
    assert found["repository"] == "acme/kernels" and len(found["rows"]) == 2
    other = compare(client, base=A, head=Z, repository="acme/other")
    assert [r["series"]["repository"] for r in other["rows"]] == ["acme/other"]


def test_commits_it_cannot_compare_are_refused(client: httpx.Client) -> None:
    measure(client)
    for query, status, says in [
        ({"base": A}, 422, "query.head: Field required"),
        ({"head": B}, 422, "query.base: Field required"),
        ({"base": "abc", "head": B}, 422, "query.base"),
        ({"base": A, "head": "main"}, 422, "query.head"),
        ({"base": A, "head": "0" * 40}, 404, f"no commit {'0' * 40} in acme/kernels has results"),
        # The head is looked for in the base's repository, and found elsewhere said so.
        ({"base": A, "head": Z}, 400, f"{A} is in acme/kernels but {Z} is in acme/other"),
        ({"base": A, "head": B, "repository": "acme/none"}, 404, f"no commit {A} in acme/none"),
        ({"base": A, "head": B, "branch": "main"}, 400, "unknown query parameter 'branch'"),
    ]:
        answer = client.get("/api/v1/compare", params=query)
        assert answer.status_code == status, answer.text
        assert says in answer.json()["detail"], query

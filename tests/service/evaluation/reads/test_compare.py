"""Two commits side by side (service.evaluation.reads.compare), on runs stored through a real
server on SQLite and PostgreSQL: every series measured at both is a row, the significant ones
first (beyond chance after Benjamini-Hochberg over the rows, and beyond the floor of the kernel's
duration class), each group by the size of its change; series measured at one side only are
listed apart; and a head of another repository is refused as such."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from service.analysis.verdicts import Q, class_floor
from service.core.errors import InvalidReference
from service.evaluation.reads.compare import compare_commits
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, medians: dict[str, float], **kw: str) -> None:
    doc = document(commit=label, medians=medians, seed=len(label), spread=0.001, **kw)
    assert client.post("/api/v1/runs", json=doc).status_code == 201


def test_rows_by_impact_and_series_of_one_side_apart(client: httpx.Client, engine: Engine) -> None:
    post(client, "base", {"slower": 100.0, "faster": 100.0, "same": 100.0, "gone": 100.0})
    post(client, "head", {"slower": 110.0, "faster": 80.0, "same": 100.0, "new": 100.0})
    with Session(engine) as session:
        found = compare_commits(session, sha_for("base")[:8], sha_for("head"), None)
    assert (found.base, found.head, found.repository) == (
        sha_for("base"), sha_for("head"), "acme/kernels")  # fmt: skip
    rows = [(r.series.kernel, r.significant) for r in found.rows]
    assert rows == [("faster", True), ("slower", True), ("same", False)]
    for r in found.rows:
        assert r.floor == class_floor(r.base_median)
        assert r.significant == (r.q_value <= Q and abs(r.change) >= r.floor)
        assert r.change == pytest.approx((r.head_median - r.base_median) / r.base_median)
        assert r.alert is None
    assert [s.kernel for s in found.only_in_base] == ["gone"]
    assert [s.kernel for s in found.only_in_head] == ["new"]


def test_a_head_of_another_repository_is_refused_as_such(
    client: httpx.Client, engine: Engine
) -> None:
    post(client, "base", {"k": 100.0})
    post(client, "elsewhere", {"k": 100.0}, repository="acme/other")
    with Session(engine) as session, pytest.raises(InvalidReference) as refused:
        compare_commits(session, sha_for("base"), sha_for("elsewhere"), None)
    assert str(refused.value) == (
        f"{sha_for('base')} is in acme/kernels but {sha_for('elsewhere')} is in acme/other"
    )

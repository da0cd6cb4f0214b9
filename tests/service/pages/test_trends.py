"""The trends page (service.pages.trends), its twin /trends.json and /trends.csv, through a real
server on SQLite and PostgreSQL: at most MAX_LINES series drawn of those that match, saying how
many matched; series chosen by id override the filters, and must all be of the repository shown;
the CSV one row per point under its fixed columns, in a file named after the choices with
anything a header cannot carry made "_"; and, on plain pairs, an environment named by its GPU,
with its fingerprint's start where two share a name or the GPU is unknown."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from service.pages.trends import CSV_COLUMNS, MAX_LINES, environment_names
from tests.conftest import ADMIN_TOKEN
from tests.documents import post_history
from tests.live_server import LiveServer

KERNELS = {f"k{i}": 100.0 + i for i in range(MAX_LINES + 1)}


def test_an_environment_is_named_by_its_gpu_and_told_apart_where_needed() -> None:
    names = environment_names(
        [("aaaaaaaa11", "H100"), ("bbbbbbbb22", "H100"), ("cccccccc33", "L4"), ("dddddddd44", "")]
    )
    assert names == {"aaaaaaaa11": "H100 [aaaaaaaa]", "bbbbbbbb22": "H100 [bbbbbbbb]",
                     "cccccccc33": "L4", "dddddddd44": "unknown GPU [dddddddd]"}  # fmt: skip


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def test_at_most_max_lines_are_drawn_of_those_that_match(client: httpx.Client) -> None:
    post_history(client, 2, KERNELS)
    data = client.get("/trends.json").json()
    assert (data["matching_series"], data["shown_series"]) == (MAX_LINES + 1, MAX_LINES)
    assert data["max_lines"] == MAX_LINES and data["message"] is None
    narrowed = client.get("/trends.json", params={"kernel": ["k0", "k8"]}).json()
    assert sorted(s["series"]["kernel"] for s in narrowed["series"]) == ["k0", "k8"]


def test_series_chosen_by_id_override_the_filters_within_the_repository(
    client: httpx.Client,
) -> None:
    post_history(client, 2, {"k": 100.0})
    post_history(client, 2, {"other": 100.0}, repository="acme/other")
    (mine,) = client.get("/trends.json").json()["series"]
    theirs = client.get("/trends.json", params={"repository": "acme/other"}).json()["series"][0]
    chosen = client.get("/trends.json", params={"series": mine["series"]["id"], "kernel": "x"})
    assert [s["series"]["id"] for s in chosen.json()["series"]] == [mine["series"]["id"]]
    ids = [mine["series"]["id"], theirs["series"]["id"]]
    refused = client.get("/trends.json", params={"series": ids, "repository": "acme/kernels"})
    assert refused.status_code == 404
    assert refused.json()["detail"] == f"not every series in {ids} exists in acme/kernels"


def test_the_csv_has_a_row_per_point_in_a_file_named_after_the_choices(
    client: httpx.Client,
) -> None:
    post_history(client, 3, {"k": 100.0}, branch="feature/x")
    exported = client.get("/trends.csv")
    assert exported.headers["content-disposition"] == (
        'attachment; filename="kernelwatch-acme_kernels-feature_x-duration.csv"'
    )
    rows = list(csv.reader(io.StringIO(exported.text)))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 4
    shown = client.get("/trends.json").json()["series"][0]["points"]
    assert [r[CSV_COLUMNS.index("commit")] for r in rows[1:]] == [p["commit"] for p in shown]
    page = client.get("/trends")
    assert page.status_code == 200 and "<title>Trends · kernelwatch</title>" in page.text
    assert "/trends.csv?repository=acme%2Fkernels&amp;branch=feature%2Fx" in page.text

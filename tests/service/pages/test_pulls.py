"""The pull requests page (service.pages.pulls) and its twin /pulls.json, through a real server
on SQLite and PostgreSQL that GitHub's signed pull_request events reach: each PR with its target,
its head and the branch its runs go to (pull/<n>), newest activity first; its head's newest run,
whether it was analysed, the merge base it was judged against and its verdict counts, nothing of
a run before one arrives; filtered by state and repository; and the page listing them."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.documents import sha_for
from tests.service.api.routes.test_webhooks import Hook, _server
from tests.service.histories.test_pull_requests import REPO, post_main, pr_document, pr_event


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Hook, httpx.Client]]:
    with _server(settings) as live, live.client() as client, live.client(ADMIN_TOKEN) as admin:
        yield Hook(client), admin


def test_each_pr_with_its_heads_newest_run_newest_activity_first(
    service: tuple[Hook, httpx.Client],
) -> None:
    hook, admin = service
    post_main(admin)
    assert hook.send(pr_event("opened", head="pr-head", base="main-1"),
                     event="pull_request").status_code == 202  # fmt: skip
    assert hook.send(pr_event("opened", number=8, head="other-head"),
                     event="pull_request").status_code == 202  # fmt: skip
    pulls = admin.get("/pulls.json").json()["pulls"]
    assert [p["number"] for p in pulls] == [8, 7]  # the newest activity first
    eight = pulls[0]
    assert (eight["number"], eight["branch"], eight["run_id"]) == (8, "pull/8", None)
    assert (eight["analysed"], eight["verdict_counts"], eight["merge_base"]) == (False, {}, None)
    head = pr_document("pr-head", "main-1", 100.0, minutes=4, seed=4, run_id="run-of-pr-head")
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    (seven,) = [p for p in admin.get("/pulls.json").json()["pulls"] if p["number"] == 7]
    assert {k: seven[k] for k in ("repository", "title", "state", "base_ref", "head")} == {
        "repository": REPO, "title": "gemm: a faster epilogue", "state": "open",
        "base_ref": "main", "head": sha_for("pr-head")}  # fmt: skip
    assert seven["branch"] == "pull/7" and seven["analysed"] is True
    assert seven["run_id"] == "run-of-pr-head"
    assert (seven["merge_base"], seven["verdict_counts"]) == (sha_for("main-1"), {"unchanged": 1})


def test_prs_are_filtered_by_state_and_repository(service: tuple[Hook, httpx.Client]) -> None:
    hook, admin = service
    hook.send(pr_event("opened"), event="pull_request")
    hook.send(pr_event("opened", number=8, head="other-head"), event="pull_request")
    hook.send(pr_event("closed", number=8, head="other-head", merged=True), event="pull_request")

    def numbers(state: str) -> list[int]:
        pulls = admin.get("/pulls.json", params={"state": state}).json()["pulls"]
        return [p["number"] for p in pulls]

    by_state = {s: numbers(s) for s in ("open", "merged", "closed", "all")}
    assert by_state == {"open": [7], "merged": [8], "closed": [], "all": [8, 7]}
    assert admin.get("/pulls.json", params={"repository": "acme/none"}).json()["pulls"] == []
    page = admin.get("/pulls", params={"state": "open"})
    assert page.status_code == 200 and "<title>Pull requests · kernelwatch</title>" in page.text
    assert 'href="/pulls.json?state=open"' in page.text

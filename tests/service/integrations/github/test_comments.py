"""service.integrations.github.comments: a pull request's one comment, written and kept up to
date against a local stand-in for GitHub on 127.0.0.1, on both databases."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.settings import Settings
from service.evaluation.backlog import analyse_run
from service.integrations.github import api
from service.integrations.github.comments import comment_body, report_pull_request
from service.models import PullRequest, Repository, Run
from service.schemas.document import RunDocument
from service.store.history.ingest import ingest
from service.store.jobs.pull_requests import pull_request_row
from tests.documents import document, sha_for
from tests.service.integrations.github.test_statuses import Answer, FakeGitHub, with_github

MAIN = {"slower": 100.0, "faster": 100.0, "steady": 100.0}
HEAD = {"slower": 112.0, "faster": 80.0, "steady": 100.0}
NEW = "/repos/acme/kernels/issues/7/comments"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "RETRY_DELAYS", (0.01, 0.01))


@pytest.fixture(scope="module")
def github_server() -> Iterator[FakeGitHub]:
    # One server for the module: stopping one costs half a second (serve_forever's poll).
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture
def fake_github(github_server: FakeGitHub) -> FakeGitHub:
    github_server.requests.clear()
    github_server.script.clear()
    return github_server


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return session_factory(engine)


def stored(factory: sessionmaker[Session], raw: dict[str, Any]) -> None:
    outcome = ingest(factory, RunDocument.model_validate(raw), raw)
    assert outcome.pk is not None
    analyse_run(factory, outcome.pk)


def judged_pull_request(
    factory: sessionmaker[Session],
    head: dict[str, float] = HEAD,
    main: dict[str, float] | None = None,
    repository: str = "acme/kernels",
    head_label: str = "pr-head",
) -> str:
    """main-0 and main-1 measured on main, pull request #7 open with `pr-head` as its head, and
    the head's run judged against main-1, its merge base; that run's id."""
    for i, label in enumerate(("main-0", "main-1")):
        stored(factory, document(commit=label, parents=["main-0"] if i else [],
                                 ancestors=["main-0"] if i else [], minutes=i, seed=i,
                                 medians=main or dict.fromkeys(head, 100.0),
                                 repository=repository))  # fmt: skip
    with factory() as session, session.begin():
        repo = session.scalars(select(Repository)).one()
        pull_request_row(session, repo, 7, "gemm: a faster epilogue", sha_for(head_label), "main")
    raw = document(commit=head_label, branch="pull/7", ancestors=["main-1", "main-0"],
                   medians=head, minutes=4, seed=4, repository=repository)  # fmt: skip
    raw["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for("main-1")}
    stored(factory, raw)
    return raw["run_id"]


def body_of(factory: sessionmaker[Session], run_uuid: str, public_url: str | None) -> str:
    with factory() as session:
        run = session.scalars(select(Run).where(Run.run_uuid == run_uuid)).one()
        return comment_body(session, run, public_url)


def comment_id(factory: sessionmaker[Session]) -> int | None:
    with factory() as session:
        return session.scalars(select(PullRequest.comment_id)).one()


def set_comment_id(factory: sessionmaker[Session], value: int) -> None:
    with factory() as session, session.begin():
        session.scalars(select(PullRequest)).one().comment_id = value


def test_the_body_counts_the_verdicts_and_lists_regressions_before_improvements(
    factory: sessionmaker[Session],
) -> None:
    body = body_of(factory, judged_pull_request(factory), "https://kw.example.com/")
    head, base = sha_for("pr-head"), sha_for("main-1")
    assert body.splitlines() == [
        "<!-- kernelwatch -->",
        f"**kernelwatch** · `kernels` at {head[:12]} against the merge base {base[:12]} on "
        "`main` (NVIDIA H100 80GB HBM3)",
        "",
        "1 improved, 1 regressed, 1 unchanged",
        "",
        "| series | change | verdict |",
        "| --- | --- | --- |",
        # The regression first, though the improvement moved further.
        "| gemm_fwd 1024³ slower | +12.0% | regressed |",
        "| gemm_fwd 1024³ faster | -20.0% | improved |",
        "",
        f"[every series and its ncu attribution](https://kw.example.com/commits/{head}"
        "?branch=pull/7)",
    ]


def test_without_a_public_url_the_body_links_nowhere(factory: sessionmaker[Session]) -> None:
    body = body_of(factory, judged_pull_request(factory), None)
    assert body.splitlines()[-1] == "| gemm_fwd 1024³ faster | -20.0% | improved |"
    assert "http" not in body


def test_a_bar_in_a_series_name_does_not_break_the_table(factory: sessionmaker[Session]) -> None:
    run = judged_pull_request(factory, head={"slow|er": 112.0, "steady": 100.0})
    rows = [line for line in body_of(factory, run, None).splitlines() if "regressed |" in line]
    assert rows == ["| gemm_fwd 1024³ slow\\|er | +12.0% | regressed |"]


def test_more_than_ten_changed_series_are_summed_up_in_one_row(
    factory: sessionmaker[Session],
) -> None:
    # Twelve series slower by 20% to 42%: the ten that moved most are listed, worst first.
    head = {f"k{i:02d}": 120.0 + 2 * i for i in range(12)}
    lines = body_of(factory, judged_pull_request(factory, head=head), None).splitlines()
    rows = lines[lines.index("| --- | --- | --- |") + 1 :]
    assert [row.split(" | ")[0] for row in rows] == [
        *(f"| gemm_fwd 1024³ k{i:02d}" for i in range(11, 1, -1)), "| … and 2 more"]  # fmt: skip
    assert rows[-1] == "| … and 2 more | | |"


def test_the_first_report_posts_one_comment_and_keeps_its_id(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    fake_github.script = [Answer(201, body={"id": 4242})]
    report_pull_request(factory, with_github(settings, fake_github), run)
    (sent,) = fake_github.requests
    assert sent.path == NEW
    assert sent.body == {"body": body_of(factory, run, "https://kernelwatch.example.com")}
    assert comment_id(factory) == 4242


def test_the_next_report_rewrites_the_same_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    fake_github.script = [Answer(201, body={"id": 4242}), Answer(200, body={"id": 4242})]
    configured = with_github(settings, fake_github)
    report_pull_request(factory, configured, run)
    report_pull_request(factory, configured, run)
    assert [r.path for r in fake_github.requests] == [
        NEW,
        "/repos/acme/kernels/issues/comments/4242",
    ]
    assert comment_id(factory) == 4242


def test_a_comment_deleted_on_github_is_posted_anew(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    set_comment_id(factory, 5)
    fake_github.script = [Answer(404, body={"message": "Not Found"}), Answer(201, body={"id": 77})]
    report_pull_request(factory, with_github(settings, fake_github), run)
    assert [r.path for r in fake_github.requests] == ["/repos/acme/kernels/issues/comments/5", NEW]
    assert comment_id(factory) == 77


def test_a_refused_update_posts_no_second_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    set_comment_id(factory, 5)
    fake_github.script = [Answer(403, body={"message": "Resource not accessible"})]
    report_pull_request(factory, with_github(settings, fake_github), run)
    assert [r.path for r in fake_github.requests] == ["/repos/acme/kernels/issues/comments/5"]
    assert comment_id(factory) == 5


def test_a_run_of_an_older_head_writes_no_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    with factory() as session, session.begin():
        session.scalars(select(PullRequest)).one().head_sha = sha_for("pr-head-2")
    report_pull_request(factory, with_github(settings, fake_github), run)
    assert fake_github.requests == []


def test_a_branch_run_writes_no_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    judged_pull_request(factory)
    with factory() as session:
        main = session.scalars(select(Run.run_uuid).where(Run.branch == "main")).first()
    assert main is not None
    report_pull_request(factory, with_github(settings, fake_github), main)
    assert fake_github.requests == []


def test_a_repository_github_does_not_have_gets_no_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory, repository="local-kernels")
    report_pull_request(factory, with_github(settings, fake_github), run)
    assert fake_github.requests == []


def test_an_answer_without_an_id_is_logged_not_raised(
    factory: sessionmaker[Session],
    settings: Settings,
    fake_github: FakeGitHub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = judged_pull_request(factory)
    fake_github.script = [Answer(201, body={"message": "created, somehow"})]
    with caplog.at_level(logging.ERROR, logger="service.integrations.github.comments"):
        report_pull_request(factory, with_github(settings, fake_github), run)
    assert f"run {run}: could not write the pull request comment" in caplog.text
    assert comment_id(factory) is None

"""service.runs.judged: a judged run reported to GitHub, its commit's status and a pull request's
comment, against a local stand-in for GitHub on 127.0.0.1."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from service.core.db import session_factory
from service.core.settings import Settings
from service.integrations.github import api
from service.models import Run
from service.runs import judged
from tests.documents import sha_for
from tests.service.integrations.github.test_comments import NEW, judged_pull_request
from tests.service.integrations.github.test_statuses import FakeGitHub, with_github


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


@pytest.mark.parametrize(("token", "wanted"), [(None, False), (" \n", False), ("ghp_x", True)])
def test_judged_runs_are_wanted_only_with_a_github_token(token: str | None, wanted: bool) -> None:
    secret = None if token is None else SecretStr(token)
    assert judged.wanted(Settings(github_token=secret)) is wanted


def test_a_branch_run_gets_its_commits_status_and_no_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    judged_pull_request(factory)
    with factory() as session:
        main = session.scalars(select(Run.run_uuid).where(Run.branch == "main")).first()
    assert main is not None
    judged.report(factory, with_github(settings, fake_github), main)
    (sent,) = fake_github.requests
    assert sent.path == f"/repos/acme/kernels/statuses/{sha_for('main-0')}"
    assert (sent.body["state"], sent.body["context"]) == ("success", "kernelwatch/kernels")


def test_a_pull_requests_run_gets_its_status_and_its_comment(
    factory: sessionmaker[Session], settings: Settings, fake_github: FakeGitHub
) -> None:
    run = judged_pull_request(factory)
    judged.report(factory, with_github(settings, fake_github), run)
    status, comment = fake_github.requests
    assert status.path == f"/repos/acme/kernels/statuses/{sha_for('pr-head')}"
    assert status.body["state"] == "failure"
    assert comment.path == NEW
    assert "| gemm_fwd 1024³ slower | +12.0% | regressed |" in comment.body["body"]


def test_github_away_costs_the_report_not_an_exception(
    factory: sessionmaker[Session], settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    run = judged_pull_request(factory)
    with socket.socket() as closed:  # a port nothing listens on once it is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    away = settings.model_copy(update={"github_token": SecretStr("ghp_x"),
                                       "github_api_url": f"http://127.0.0.1:{port}",
                                       "github_timeout_seconds": 1.0})  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="service.integrations.github"):
        judged.report(factory, away, run)
    # Each call was tried every time, and nothing was raised.
    assert caplog.text.count("(attempt 3)") == 2

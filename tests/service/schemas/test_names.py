"""The names a repository and a branch may have: one rule each, the same at every door (the
result document, a job queued through the API, a GitHub push, an import)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import TypeAdapter, ValidationError
from sqlalchemy import Engine, func, select

from service.core.settings import Settings
from service.models import Job
from service.schemas.names import GitBranch, RepositoryName, branch_refusal
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import Hook, _server, push_payload

REPOSITORY = TypeAdapter(RepositoryName)
BRANCH = TypeAdapter(GitBranch)
NO_REPOSITORY = ["..", "../../etc/passwd", "acme/..", "./x", "a b", "", "acme//x"]
NO_BRANCH = ["../../x y", "a b..c", "a..b", "x.lock", "/x", "x/", "a//b", "@{x}"]


@pytest.mark.parametrize("name", NO_REPOSITORY)
def test_a_repository_name_that_can_never_work_is_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        REPOSITORY.validate_python(name)


@pytest.mark.parametrize("name", ["acme/kernels", "a.b/c-d_e", "gitlab/group/sub/proj", "solo"])
def test_repository_names_of_github_and_other_forges_are_taken(name: str) -> None:
    assert REPOSITORY.validate_python(name) == name


@pytest.mark.parametrize("branch", NO_BRANCH)
def test_a_branch_git_refuses_is_refused(branch: str) -> None:
    with pytest.raises(ValidationError):
        BRANCH.validate_python(branch)
    assert branch_refusal(branch) is not None


def test_the_same_rule_at_every_door(live: LiveServer, engine: Engine) -> None:
    """The API's job, the result document and a push: refused alike, nothing queued."""
    with live.client(ADMIN_TOKEN) as admin:
        job = {"repository": "acme/kernels", "sha": sha_for("c1"), "branch": "../../x y"}
        assert admin.post("/api/v1/jobs", json=job).status_code == 422
        bad_repo = {**job, "branch": "main", "repository": "../../etc/passwd"}
        assert admin.post("/api/v1/jobs", json=bad_repo).status_code == 422
        doc = document(commit="c1", repository="acme/..")
        assert admin.post("/api/v1/runs", json=doc).status_code == 422
        doc = document(commit="c1", branch="a b..c")
        assert admin.post("/api/v1/runs", json=doc).status_code == 422
    with live.client() as client:
        payload = push_payload(after=sha_for("c1"))
        payload["ref"] = "refs/heads/a b..c"
        answer = Hook(client).send(payload)
        assert answer.status_code == 422, answer.text
        assert "is not a valid git branch name" in answer.json()["detail"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Job)).scalar_one() == 0


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveServer]:
    """The service with its webhook's secret set."""
    with _server(settings) as server:
        yield server

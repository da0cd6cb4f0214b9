"""Clone URLs a runner's git is handed (issue 35, item 3): only the schemes the deployment names
(https and ssh by default), local paths only where a setting allows them; refused with a clear
error where they enter (a push, a pull request, a job queued by the API or the CLI), and the
runner's git restricted the same way, so that an old job or another path cannot slip through."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from runner.suite.checkout import CheckoutError, Checkouts
from service.api.app import create_app
from service.cli import main as kernelwatch
from service.core import clone_urls
from service.core.settings import Settings
from service.models import Repository
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.hardening.test_webhook_abuse import rows
from tests.live_server import LiveServer
from tests.runner.gitrepo import commit_all, git
from tests.service.api.routes.test_webhooks import SECRET, Hook, push_payload
from tests.service.histories.test_pull_requests import pr_event

REFUSED = ["ext::sh -c touch% /tmp/pwned", "file:///etc", "/srv/repo.git", "./repo",
           "http://example.com/a.git", "fd::17"]  # fmt: skip
ALLOWED = ["https://github.com/acme/kernels.git", "git@github.com:acme/kernels.git",
           "ssh://git@example.com/acme/kernels.git"]  # fmt: skip


@pytest.fixture
def strict(settings: Settings) -> Settings:
    settings.allow_local_clone_urls = False  # the default: the test fixture allows them
    settings.webhook_secret = SECRET
    return settings


def test_only_the_named_schemes_pass_and_paths_only_when_allowed() -> None:
    strict = Settings(allow_local_clone_urls=False)
    for url in REFUSED:
        assert clone_urls.refusal(url, strict), url
    for url in ALLOWED:
        assert clone_urls.refusal(url, strict) is None, url
    local = Settings(allow_local_clone_urls=True, clone_url_schemes="https")  # type: ignore[arg-type]
    assert clone_urls.refusal("/srv/repo.git", local) is None
    assert clone_urls.refusal("file:///srv/repo.git", local) is None
    assert "uses 'ssh'" in (clone_urls.refusal("git@github.com:a/b.git", local) or "")
    assert "uses 'ext'" in (clone_urls.refusal(REFUSED[0], local) or "")


@pytest.mark.parametrize("url", REFUSED)
def test_a_push_or_pull_request_with_a_refused_clone_url_is_422(
    strict: Settings, engine: Engine, url: str
) -> None:
    with LiveServer(create_app(strict, migrate=False)) as live, live.client() as client:
        hook = Hook(client)
        payload = push_payload(after=sha_for("a"))
        payload["repository"]["clone_url"] = url
        answer = hook.send(payload)
        assert answer.status_code == 422, answer.text
        assert f"clone URL {url!r}" in answer.json()["detail"]
        event = pr_event("opened")
        event["repository"] = {"full_name": "acme/kernels", "clone_url": url}
        answer = hook.send(event, event="pull_request")
        assert answer.status_code == 422, answer.text
    assert rows(engine) == (0, 0, 0)  # no job, no repository, no delivery


def test_a_job_queued_by_hand_takes_only_an_allowed_clone_url(
    strict: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    body = {"repository": "acme/kernels", "sha": sha_for("a"), "clone_url": REFUSED[0]}
    with LiveServer(create_app(strict, migrate=False)) as live, live.client(ADMIN_TOKEN) as admin:
        refused = admin.post("/api/v1/jobs", json=body)
        assert refused.status_code == 422 and "uses 'ext'" in refused.json()["detail"]
        queued = admin.post("/api/v1/jobs", json={**body, "clone_url": ALLOWED[0]})
        assert queued.status_code == 201, queued.text
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", strict.effective_database_url)
    monkeypatch.delenv("KERNELWATCH_ALLOW_LOCAL_CLONE_URLS", raising=False)
    args = ["enqueue", "--repo", "acme/other", "--sha", sha_for("b"), "--clone-url"]
    assert kernelwatch([*args, "file:///etc"]) != 0
    err = capsys.readouterr().err
    assert "--clone-url: clone URL 'file:///etc' is a local path" in err and "Traceback" not in err
    assert kernelwatch(["repo", "runner-labels", "acme/third", "--clone-url", REFUSED[0]]) != 0
    monkeypatch.setenv("KERNELWATCH_ALLOW_LOCAL_CLONE_URLS", "1")
    assert kernelwatch([*args, "/srv/other.git"]) == 0
    with engine.connect() as conn:
        urls = dict(conn.execute(select(Repository.name, Repository.clone_url)).all())
    assert urls == {"acme/kernels": ALLOWED[0], "acme/other": "/srv/other.git"}


def test_a_documents_refused_url_is_not_kept_as_the_clone_url(
    strict: Settings, engine: Engine
) -> None:
    doc = document(commit="a")
    doc["repository"]["url"] = "file:///etc"
    with LiveServer(create_app(strict, migrate=False)) as live, live.client(ADMIN_TOKEN) as admin:
        assert admin.post("/api/v1/runs", json=doc).status_code == 201  # kept, measurements too
    with engine.connect() as conn:
        assert conn.execute(select(Repository.clone_url)).scalar_one() is None


def test_the_runners_git_refuses_what_the_service_would(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    commit_all(repo, "a")
    strict = Checkouts(tmp_path / "strict", local=False)
    with pytest.raises(CheckoutError, match="transport 'file' not allowed"):
        strict.clone_for(str(repo))
    marker = tmp_path / "pwned"
    for checkouts in (strict, Checkouts(tmp_path / "local", local=True)):
        with pytest.raises(CheckoutError, match="transport 'ext' not allowed"):
            checkouts.clone_for(f"ext::sh -c touch% {marker}")
    assert not marker.exists()
    assert (Checkouts(tmp_path / "local", local=True).clone_for(str(repo)) / "HEAD").exists()


def test_the_agent_takes_local_paths_only_when_told(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.suite.checkout import allowed_protocols, local_clones_allowed

    monkeypatch.delenv("KERNELWATCH_ALLOW_LOCAL_CLONE_URLS", raising=False)
    monkeypatch.delenv("KERNELWATCH_CLONE_URL_SCHEMES", raising=False)
    assert not local_clones_allowed()
    assert allowed_protocols(local=False) == "https:ssh"
    monkeypatch.setenv("KERNELWATCH_ALLOW_LOCAL_CLONE_URLS", "1")
    monkeypatch.setenv("KERNELWATCH_CLONE_URL_SCHEMES", "https")
    assert local_clones_allowed() and allowed_protocols(local=True) == "https:file"
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("git version")  # GIT_ALLOW_PROTOCOL needs git >= 2.12

"""A pull request's job: the runner names the merge base of the PR head with the target
branch's tip in the document (real git repositories, no GPU)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from runner.run.pipeline import pull_request_section
from runner.suite.checkout import Checkouts


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    (repo / f"{name}.txt").write_text(name)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", name)
    return git(repo, "rev-parse", "HEAD")


def test_the_merge_base_with_the_targets_tip(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    m0 = commit(repo, "m0")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "f1")
    head = commit(repo, "f2")
    git(repo, "checkout", "-q", "main")
    tip = commit(repo, "m1")
    checkouts = Checkouts(tmp_path / "cache")
    clone = checkouts.clone_for(str(repo))
    pull = {"number": 7, "base_ref": "main", "base_sha": tip}
    assert pull_request_section(checkouts, clone, head, pull) == {
        "number": 7, "base_ref": "main", "merge_base": m0}  # fmt: skip
    unknown = {**pull, "base_sha": "f" * 40}
    assert pull_request_section(checkouts, clone, head, unknown)["merge_base"] is None
    assert pull_request_section(checkouts, clone, head, None) is None

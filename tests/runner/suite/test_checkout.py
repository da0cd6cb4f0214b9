"""Cached clones and per-job worktrees on real git repositories."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from runner.suite.checkout import CheckoutError, Checkouts
from tests.runner.gitrepo import commit_all, cpu_suite_repo, git


def test_worktree_at_the_exact_commit_with_its_metadata(tmp_path: Path) -> None:
    repo, first, second = cpu_suite_repo(tmp_path / "repo")
    checkouts = Checkouts(tmp_path / "cache")
    path, info = checkouts.worktree(str(repo), first, "job-1")
    assert "REPEAT = 1" in (path / "cpu_kernels.py").read_text()
    assert info.sha == first
    assert info.parents == []
    path2, info2 = checkouts.worktree(str(repo), second[:10], "job-2")
    assert "REPEAT = 4" in (path2 / "cpu_kernels.py").read_text()
    assert info2.parents == [first]
    assert info2.ancestors == [first]
    assert info.ancestors == []
    assert info2.author_name == "Ada Lovelace"
    assert info2.message == "cpu suite: repeat the work 4x\n\nThis is slower."
    assert info2.committed_at.tzinfo == UTC
    checkouts.remove(checkouts.clone_for(str(repo)), path)
    assert not path.exists()


def test_new_commits_are_fetched_into_the_cached_clone(tmp_path: Path) -> None:
    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    checkouts = Checkouts(tmp_path / "cache")
    checkouts.clone_for(str(repo))
    (repo / "NOTES.md").write_text("ünïcödé\n")
    third = commit_all(repo, "notes: ünïcödé")
    path, info = checkouts.worktree(f"file://{repo}", third, "job")
    assert (path / "NOTES.md").read_text() == "ünïcödé\n"
    assert info.message == "notes: ünïcödé"


def test_unknown_commits_and_repositories_are_clear_errors(tmp_path: Path) -> None:
    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    checkouts = Checkouts(tmp_path / "cache")
    with pytest.raises(CheckoutError, match="failed"):
        checkouts.worktree(str(repo), "f" * 40, "job")
    with pytest.raises(CheckoutError, match="nowhere does not exist"):
        checkouts.worktree(str(tmp_path / "nowhere"), "HEAD", "job")
    assert git(repo, "status", "--porcelain") == ""

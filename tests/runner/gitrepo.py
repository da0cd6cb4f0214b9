"""Temporary git repositories holding the CPU fixture suite, for runner tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CPU_SUITE = Path(__file__).resolve().parent / "cpu_suite"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=True,
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def cpu_suite_repo(path: Path, *, slower_repeat: int = 4) -> tuple[Path, str, str]:
    """A repository with two commits of the CPU suite, the second really slower."""
    shutil.copytree(CPU_SUITE, path)
    git(path, "init", "-q", "-b", "main")
    first = commit_all(path, "cpu suite: first version")
    source = (path / "cpu_kernels.py").read_text()
    (path / "cpu_kernels.py").write_text(source.replace("REPEAT = 1", f"REPEAT = {slower_repeat}"))
    second = commit_all(path, f"cpu suite: repeat the work {slower_repeat}x\n\nThis is slower.")
    return path, first, second

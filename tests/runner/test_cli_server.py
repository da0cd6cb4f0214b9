"""A service URL that cannot work is refused when the agent starts, not retried for ever."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(sys.executable).parent / "kernelwatch-runner"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:99999", "'http://127.0.0.1:99999': the port must be 1 to 65535"),
        ("127.0.0.1:8000", "'127.0.0.1:8000' is no service URL: give http(s)://HOST[:PORT]"),
        ("ftp://files.example.com", "'ftp://files.example.com' is no service URL"),
    ],
)
def test_an_impossible_server_url_is_one_line_at_once(url: str, says: str) -> None:
    done = subprocess.run([RUNNER, "agent", "--server", url, "--token", "t"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert f"argument --server: {says}" in done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.mkdir(), "is a folder but no git repository: `git init` it"),
        (lambda p: p.write_text("x"), "is a file: --repo takes the repository's folder"),
        (lambda p: None, "does not exist"),
    ],
    ids=["folder", "file", "missing"],
)
def test_a_repo_that_is_no_repository_says_what_it_is(tmp_path: Path, make: object,
                                                       says: str) -> None:  # fmt: skip
    """Not git's "repository ... does not exist" of a folder that does exist."""
    path = tmp_path / "repo"
    make(path)  # type: ignore[operator]
    done = subprocess.run([RUNNER, "run", "--repo", str(path), "--commit", "HEAD", "--cache",
                           str(tmp_path / "cache")], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].endswith(f"{path} {says}") or (
        f"{path} {says}" in done.stderr
    ), done.stderr

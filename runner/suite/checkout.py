"""A cached clone per repository and a git worktree per job at the exact commit."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runner.suite.bytecode import forget

_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_ANCESTORS = 200


class CheckoutError(RuntimeError):
    """git could not give us the commit; the message carries git's own words."""


# The protocols git may fetch a job's repository over, as the service allows its clone URLs
# (service.core.clone_urls): $KERNELWATCH_CLONE_URL_SCHEMES (https,ssh by default), and local
# paths only where they are allowed. git refuses every other (`ext::`, which runs a command).
SCHEMES_ENV = "KERNELWATCH_CLONE_URL_SCHEMES"
LOCAL_ENV = "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS"
DEFAULT_SCHEMES = ("https", "ssh")


def allowed_protocols(local: bool) -> str:
    """GIT_ALLOW_PROTOCOL's value: git behaves as if protocol.allow were `never` but for these."""
    configured = os.environ.get(SCHEMES_ENV, "")
    schemes = [s.strip().lower() for s in configured.split(",") if s.strip()]
    return ":".join([*(schemes or DEFAULT_SCHEMES), *(["file"] if local else [])])


def local_clones_allowed() -> bool:
    return os.environ.get(LOCAL_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _git(
    *args: str, cwd: Path | None = None, timeout: float = 600, protocols: str | None = None
) -> str:
    env = None if protocols is None else {**os.environ, "GIT_ALLOW_PROTOCOL": protocols}
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
            check=False, env=env,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise CheckoutError("git is not installed on this runner") from exc
    except subprocess.TimeoutExpired as exc:
        raise CheckoutError(f"git {' '.join(args[:2])} timed out after {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise CheckoutError(f"git {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: list[str]
    author_name: str
    author_email: str
    message: str
    committed_at: datetime
    ancestors: list[str]

    def to_document(self) -> dict:
        return {
            "sha": self.sha,
            "parents": self.parents,
            "ancestors": self.ancestors,
            "author_name": self.author_name,
            "author_email": self.author_email,
            "message": self.message,
            "committed_at": self.committed_at.isoformat(),
        }


def commit_info(repo: Path, rev: str) -> CommitInfo:
    # NUL-separated so that any message text survives.
    out = _git("show", "-s", "--format=%H%x00%P%x00%an%x00%ae%x00%cI%x00%B", rev, cwd=repo)
    sha, parents, name, email, when, message = out.split("\x00", 5)
    # The service's baseline walks this first-parent line, also across commits never run.
    line = _git("rev-list", "--first-parent", f"--max-count={MAX_ANCESTORS + 1}", sha, cwd=repo)
    return CommitInfo(
        sha=sha,
        parents=parents.split(),
        author_name=name,
        author_email=email,
        message=message.rstrip("\n"),
        committed_at=datetime.fromisoformat(when).astimezone(UTC),
        ancestors=line.split()[1:],
    )


def local_problem(source: str, repository: bool = True) -> str | None:
    """Why a local path cannot be what --repo names (None for a URL or a path that can): git
    said only "repository ... does not exist" of a folder that does but is no repository."""
    if ":" in source:  # a URL, host:path, a transport:: (git names and refuses those itself)
        return None
    path = Path(source)
    if not path.exists():
        return f"{source} does not exist"
    if not path.is_dir():
        return f"{source} is a file: --repo takes the repository's folder (or a clone URL)"
    if repository:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode != 0:
            return (f"{source} is a folder but no git repository: `git init` it and commit the "
                    "suite, or point --repo at the repository")  # fmt: skip
    return None


class Checkouts:
    """Clones under `cache_dir/repos`, worktrees under `cache_dir/worktrees`; `local`: whether
    a path (or file:// URL) may be cloned, as a person's own `run --repo .` may and a job
    from the service may only where the host allows it (local_clones_allowed)."""

    def __init__(self, cache_dir: Path, local: bool = True) -> None:
        self.cache_dir = cache_dir
        self.protocols = allowed_protocols(local)
        (cache_dir / "repos").mkdir(parents=True, exist_ok=True)
        (cache_dir / "worktrees").mkdir(parents=True, exist_ok=True)

    def clone_for(self, source: str) -> Path:
        """The cached bare clone of `source` (a URL or a path), fetched up to date."""
        if (problem := local_problem(source)) is not None:
            raise CheckoutError(problem)
        key = hashlib.sha256(source.encode()).hexdigest()[:16]
        name = re.sub(r"[^\w.-]+", "_", source.rstrip("/").rsplit("/", 1)[-1])[:40]
        clone = self.cache_dir / "repos" / f"{name}-{key}.git"
        if not (clone / "HEAD").exists():
            shutil.rmtree(clone, ignore_errors=True)
            # "--": a source that starts with "-" is a path or URL, never an option.
            _git("clone", "--bare", "--quiet", "--", source, str(clone), protocols=self.protocols)
        _git(
            "fetch",
            "--quiet",
            "--force",
            "--prune",
            source,
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
            cwd=clone,
            protocols=self.protocols,
        )
        return clone

    def resolve(self, clone: Path, rev: str) -> str:
        try:
            return _git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=clone).strip()
        except CheckoutError:
            if _SHA.match(rev):
                # A commit no branch points at yet (a force-push, a PR head): ask for it by sha.
                _git("fetch", "--quiet", "origin", rev, cwd=clone, protocols=self.protocols)
                return _git("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=clone).strip()
            raise

    def worktree(self, source: str, rev: str, job: str) -> tuple[Path, CommitInfo]:
        """A fresh detached worktree of `rev`; `remove` it when the job is done."""
        clone = self.clone_for(source)
        sha = self.resolve(clone, rev)
        path = self.cache_dir / "worktrees" / re.sub(r"[^\w.-]+", "_", job)
        if path.exists():
            self.remove(clone, path)
        _git("worktree", "prune", cwd=clone)
        _git("worktree", "add", "--detach", "--force", str(path), sha, cwd=clone)
        return path, commit_info(path, sha)

    def remove(self, clone: Path, path: Path) -> None:
        forget(self.cache_dir, path)  # its workers' bytecode (runner.suite.bytecode)
        try:
            _git("worktree", "remove", "--force", str(path), cwd=clone)
        except CheckoutError:
            shutil.rmtree(path, ignore_errors=True)
            _git("worktree", "prune", cwd=clone)

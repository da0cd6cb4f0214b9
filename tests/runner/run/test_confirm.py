"""runner.run.confirm on the CPU fixture suite: a confirmation job. Base and head are each
checked out, built and checked, then timed process by process, base then head (A B A B), only
the workloads asked for; the head's document carries the base's as `paired_base`, the job's ids
only on the head's; a stop between two processes ends it with JobInterrupted; either way no
worktree is left behind."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from runner.measure.phase import Outcome
from runner.run.confirm import execute_confirmation
from runner.run.pipeline import JobInterrupted, Progress, RunRequest
from tests.runner.gitrepo import CPU_SUITE, commit_all, git

WANTED = [{"name": "fma", "params": {"n": 256}}]


class Stages(Progress):
    """The stages as they come; sets the run's stop event at the stage named `stop_at`."""

    def __init__(self, request: RunRequest | None = None, stop_at: str = "") -> None:
        self.seen: list[str] = []
        self.request, self.stop_at = request, stop_at

    def stage(self, name: str, total: int | None = None) -> None:
        self.seen.append(name)
        if self.request is not None and name == self.stop_at:
            self.request.stop.set()

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        pass


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The CPU suite in two commits, timed in 2 short processes: base, then head (slower)."""
    path = shutil.copytree(CPU_SUITE, tmp_path_factory.mktemp("confirm") / "kernels")
    toml = path / "kernelwatch.toml"
    toml.write_text(
        toml.read_text()
        .replace("processes = 3", "processes = 2")
        .replace("max_seconds = 1.0", "max_seconds = 0.2")
    )
    git(path, "init", "-q", "-b", "main")
    base = commit_all(path, "base")
    module = path / "cpu_kernels.py"
    module.write_text(module.read_text().replace("REPEAT = 1", "REPEAT = 2"))
    return path, base, commit_all(path, "head: twice the work")


def request_for(repo: tuple[Path, str, str], cache: Path, **extra: Any) -> RunRequest:
    return RunRequest(source=str(repo[0]), rev=repo[2], cache_dir=cache, **extra)


def test_the_sides_are_timed_in_turn_and_the_head_carries_the_base(
    repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, base, head = repo
    request = request_for(
        repo,
        tmp_path / "cache",
        job_id=41,
        lease_token="kwa_lease",
        repository="acme/kernels",
        branch="feature",
    )
    stages = Stages()
    document = execute_confirmation(request, base, WANTED, stages)
    assert stages.seen == [
        "base: build and check",
        "head: build and check",
        "timing base 1/2",
        "timing head 1/2",
        "timing base 2/2",
        "timing head 2/2",
    ]
    paired = document["paired_base"]
    assert (document["commit"]["sha"], paired["commit"]["sha"]) == (head, base)
    assert (document["job_id"], document["lease_token"]) == (41, "kwa_lease")
    assert (paired["job_id"], paired["lease_token"]) == (None, None)
    assert "paired_base" not in paired
    for doc, role in ((document, "head"), (paired, "base")):
        assert doc["log_tail"] == (
            f"confirmation ({role}): interleaved with the other side, A B A B"
        )
        assert doc["repository"] == {"name": "acme/kernels", "url": None}  # a local path
        assert doc["branch"] == "feature"
        [fma] = doc["workloads"]  # only the workload asked for, of the suite's two
        assert (fma["name"], fma["params"]) == ("fma", {"n": 256})
        assert len(fma["timing"]["processes"]) == 2
    assert list((tmp_path / "cache" / "worktrees").iterdir()) == []


def test_a_stop_between_two_processes_ends_the_confirmation_and_its_worktrees(
    repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    request = request_for(repo, tmp_path / "cache")
    stages = Stages(request, stop_at="timing base 1/2")
    with pytest.raises(JobInterrupted, match="stopped during the confirmation"):
        execute_confirmation(request, repo[1], WANTED, stages)
    assert stages.seen[-1] == "timing base 1/2"  # the head's first process never started
    assert list((tmp_path / "cache" / "worktrees").iterdir()) == []

"""runner.run.doubtful on the CPU fixture suite: launches in doubt after a run's first pass.
Only GPU-timed launches whose processes sat more than half a percent apart are timed again, and
not the short ones; nothing in doubt leaves the warm workers waiting; otherwise they are closed,
a base that cannot be checked out or measures none of them is named in the log, and the head's
launches are timed alone in fresh processes whose outcomes replace the first ones.

The first pass's outcomes are written here as a GPU timer reports them (the CPU suite is
host-timed, and host-timed launches are never timed again); what is timed again is timed for
real by the suite's workers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from runner.measure.phase import Outcome, WarmWorkers
from runner.run import doubtful, paired
from runner.run.paired import BaseCommit
from runner.run.pipeline import Progress
from runner.run.report import WorkloadRecord
from runner.suite.checkout import Checkouts
from runner.suite.load import Suite, load_suite
from tests.runner.gitrepo import CPU_SUITE, commit_all, git


class Seen(Progress):
    def __init__(self) -> None:
        self.stages: list[tuple[str, int | None]] = []
        self.done: list[str] = []

    def stage(self, name: str, total: int | None = None) -> None:
        self.stages.append((name, total))

    def advance(self, label: str, outcome: Outcome | None = None) -> None:
        self.done.append(label)


def gpu_timed(*medians: float) -> list[Outcome]:
    return [
        Outcome("ok", result={"samples": [m, m], "method": "cupti", "stop_reason": "enough"})
        for m in medians
    ]


def records() -> dict[str, WorkloadRecord]:
    """fma[n=256] 3% apart (sd 2.1%), fma[n=512] 0.1% apart: only the first is in doubt."""
    out = {}
    for n, medians in ((256, (100.0, 103.0)), (512, (100.0, 100.1))):
        wid = f"fma[n={n}]"
        info = {"id": wid, "name": "fma", "params": {"n": n}, "kernels": ["fma_cpu"]}
        out[wid] = WorkloadRecord(info=info, timings=gpu_timed(*medians))
    return out


def suite_at(path: Path) -> Suite:
    tree = shutil.copytree(CPU_SUITE, path)
    toml = tree / "kernelwatch.toml"
    toml.write_text(
        toml.read_text()
        .replace("processes = 3", "processes = 2")
        .replace("max_seconds = 1.0", "max_seconds = 0.1")
    )
    return load_suite(tree)


@pytest.fixture
def head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Suite:
    monkeypatch.setenv("KERNELWATCH_WANDER_PROCESSES", "3")
    return suite_at(tmp_path / "head")


def base_without(tmp_path: Path, entry: str, message: str) -> tuple[BaseCommit, str]:
    """A base commit of the CPU suite whose workloads lack `entry` (a Workload(...) in it)."""
    repo = shutil.copytree(CPU_SUITE, tmp_path / "repo")
    module = repo / "cpu_kernels.py"
    module.write_text(module.read_text().replace(entry, ""))
    git(repo, "init", "-q", "-b", "main")
    sha = commit_all(repo, message)
    cache = tmp_path / "cache"
    return BaseCommit(Checkouts(cache), str(repo), sha, cache, lambda suite: 1), sha


def time_wandering(
    suite: Suite,
    recs: dict[str, WorkloadRecord],
    warm: WarmWorkers,
    progress: Progress,
    lines: list[str],
    short: list[str],
    base: BaseCommit | None = None,
) -> object:
    return doubtful.time_wandering(
        suite, list(recs), recs, short, 5, {}, warm, progress, lines.append, lambda: None, base
    )


def test_nothing_in_doubt_times_nothing_and_leaves_the_warm_workers_waiting(head: Suite) -> None:
    recs = records()
    lines: list[str] = []
    with WarmWorkers(head, [("time", 9)]) as warm:
        # the launch in doubt is short: its own extra processes see to it
        assert time_wandering(head, recs, warm, Seen(), lines, short=["fma[n=256]"]) is None
        taken = warm.take("time", 9)
        assert taken is not None  # still there for the phase it was started for
        proc, config = taken
        proc.communicate(timeout=30)  # nothing to do: it exits
        Path(config).unlink()
    assert lines == [] and recs["fma[n=256]"].timings == gpu_timed(100.0, 103.0)


def test_without_a_base_to_time_against_the_launch_is_timed_alone_in_fresh_processes(
    head: Suite, tmp_path: Path
) -> None:
    base = BaseCommit(
        Checkouts(tmp_path / "cache"),
        str(tmp_path / "gone"),
        "c" * 40,
        tmp_path / "cache",
        lambda suite: 1,
    )
    recs, seen, lines = records(), Seen(), []
    with WarmWorkers(head, [("time", 9)]) as warm:
        assert time_wandering(head, recs, warm, seen, lines, short=[], base=base) is None
        assert warm.take("time", 9) is None  # closed before the launches were timed again
    assert lines == [
        f"timing: no base to time the doubtful launches against (base {'c' * 12} could not be "
        f"checked out: {tmp_path / 'gone'} does not exist)",
        "timing: 1 launches whose processes sat apart (sd fma[n=256] 2.1%) timed again in 3 "
        "fresh processes of their own ($KERNELWATCH_WANDER_PROCESSES)",
    ]
    assert seen.stages == [
        (f"base {'c' * 12}: build and check", None),
        *((f"timing {r}/3 (processes apart)", 1) for r in (1, 2, 3)),
    ]
    assert seen.done == ["fma[n=256]"] * 3
    again = recs["fma[n=256]"].timings
    assert len(again) == 3 and all(o.status == "ok" and o.result for o in again)
    for outcome in again:
        assert outcome.result is not None and outcome.result["method"] == "host"
        assert outcome.result["stop_reason"].startswith(
            "timed apart from the suite's other workloads in a fresh process, 3 in all (its 2 "
            "processes among them sat 2.1% apart and are left out): "
        )
    assert recs["fma[n=512]"].timings == gpu_timed(100.0, 100.1)  # steady: kept as it was


def test_a_base_that_measures_none_of_the_launches_is_named_and_times_nothing(
    head: Suite, tmp_path: Path
) -> None:
    """The base's suite has only fma[n=512]: the doubtful fma[n=256] has no counterpart."""
    base, sha = base_without(tmp_path, 'Workload("fma", 256, ("fast",)), ', "only the larger size")
    recs, lines = records(), []
    try:
        timed = doubtful.time_against_base(
            head, recs, {"fma[n=256]": 0.021}, 4, 5, {}, base, Seen(), lines.append, lambda: None
        )
    finally:
        base.close()
    assert timed is None
    assert lines == [
        f"timing: no base to time the doubtful launches against (base "
        f"{sha[:12]} measures none of them)"
    ]
    assert recs["fma[n=256]"].timings == gpu_timed(100.0, 103.0)
    assert list((tmp_path / "cache" / "worktrees").iterdir()) == []


def test_a_launch_that_changed_is_timed_against_the_base_though_its_processes_agreed(
    head: Suite, tmp_path: Path
) -> None:
    """fma[n=512]'s processes agreed (0.1%), but its launch changed since the last one profiled:
    with a base, it is timed interleaved with the base's build, and its stop reasons and the
    log say what changed; the wandering fma[n=256] rides along in the same process pairs."""
    repo = shutil.copytree(CPU_SUITE, tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    sha = commit_all(repo, "the base")
    base = BaseCommit(
        Checkouts(tmp_path / "cache"), str(repo), sha, tmp_path / "cache", lambda suite: 1
    )
    recs, seen, lines = records(), Seen(), []
    recs["fma[n=512]"].timings = []  # left out of the suite's processes for its pairs
    changed = {"fma[n=512]": "kernel fma_cpu: its code"}
    try:
        with WarmWorkers(head, [("time", 9)]) as warm:
            found = doubtful.time_wandering(head, list(recs), recs, [], 5, {}, warm, seen,
                                            lines.append, lambda: None, base, changed)  # fmt: skip
    finally:
        base.close()
    assert found is not None
    side, timed = found
    assert sorted(timed) == sorted(side.records)  # the base's records of both launches
    assert lines == [
        f"timing: 2 launches whose processes sat apart (sd fma[n=256] 2.1%) or whose launch "
        f"changed since the last one measured (fma[n=512]: kernel fma_cpu: its code) timed "
        f"interleaved with base {sha[:12]}, 2 fresh processes of each, A B A B "
        f"($KERNELWATCH_PAIR_BASE)"
    ]
    for wid, why in (
        ("fma[n=512]", "its launch changed since the last one measured: kernel fma_cpu: its "
         "code"),
        ("fma[n=256]", "its 2 processes among the suite's other workloads sat 2.1% apart and "
         "are left out"),
    ):  # fmt: skip
        again = recs[wid].timings
        assert len(again) == 2 and all(o.status == "ok" and o.result for o in again)
        for outcome in again:
            assert outcome.result is not None
            assert outcome.result["stop_reason"].startswith(
                f"timed interleaved with base {sha[:12]} (A B A B) in 2 fresh processes of each "
                f"side ({why}): "
            ), outcome.result["stop_reason"]


def test_a_changed_launch_no_base_measures_is_timed_alone_in_fresh_processes(
    head: Suite, tmp_path: Path
) -> None:
    """fma[n=512] changed and was left out of the suite's processes; the base's suite lacks it:
    it is timed alone, in wander_processes fresh processes, and the log says why."""
    base, sha = base_without(tmp_path, ', Workload("fma", 512, ("fast",))', "only the smaller size")
    recs, lines = records(), []
    recs["fma[n=512]"].timings = []
    recs["fma[n=256]"].timings = gpu_timed(100.0, 100.1)  # steady: only the change is in doubt
    try:
        with WarmWorkers(head, []) as warm:
            found = doubtful.time_wandering(head, list(recs), recs, [], 5, {}, warm, Seen(),
                                            lines.append, lambda: None, base,
                                            {"fma[n=512]": "its inputs"})  # fmt: skip
    finally:
        base.close()
    assert found is None
    assert lines == [
        f"timing: no base to time the doubtful launches against (base {sha[:12]} measures none "
        "of them)",
        "timing: 1 launches that changed since the last one measured timed in 3 fresh processes "
        "of their own, with no base to time them against",
    ]
    again = recs["fma[n=512]"].timings
    assert len(again) == 3 and all(o.status == "ok" and o.result for o in again)
    assert recs["fma[n=256]"].timings == gpu_timed(100.0, 100.1)


def test_without_a_base_a_changed_launch_keeps_its_first_processes(head: Suite) -> None:
    """A root commit (no base): the change is no doubt the runner can settle; nothing is timed
    again and the warm workers stay."""
    recs, lines = records(), []
    changed = {"fma[n=512]": "kernel fma_cpu: its code"}
    with WarmWorkers(head, [("time", 9)]) as warm:
        assert doubtful.time_wandering(head, list(recs), recs, ["fma[n=256]"], 5, {}, warm,
                                       Seen(), lines.append, lambda: None, None,
                                       changed) is None  # fmt: skip
        taken = warm.take("time", 9)
        assert taken is not None
        proc, config = taken
        proc.communicate(timeout=30)
        Path(config).unlink()
    assert lines == [] and recs["fma[n=512]"].timings == gpu_timed(100.0, 100.1)


def test_the_pairs_processes_are_started_ahead_with_no_context_and_none_is_left_waiting(
    head: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each side's pair processes import the suite's frameworks while the base builds and
    checks: every timed pair process of either side is one started ahead, for its seed, with no
    CUDA context; none is left waiting afterwards. With $KERNELWATCH_WARM_WORKERS=0 none is."""
    repo = shutil.copytree(CPU_SUITE, tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    sha = commit_all(repo, "the base")
    started: list[tuple[str, list[tuple[str, int]], bool]] = []
    taken: list[tuple[str, int, bool]] = []
    made, take = paired.WarmWorkers.__init__, paired.WarmWorkers.take

    def init(self: Any, suite: Suite, wanted: Any, env: Any = None, **kw: Any) -> None:
        made(self, suite, wanted, env, **kw)
        self.root = suite.root
        started.append((suite.root.name, list(wanted), kw.get("context", True)))

    def took(self: Any, mode: str, seed: int) -> Any:
        got = take(self, mode, seed)
        taken.append((self.root.name, seed, got is not None))
        return got

    waited: list[str] = []
    ready = paired.WarmWorkers.ready

    def readied(self: Any, timeout: float) -> None:
        waited.append(self.root.name)
        ready(self, timeout)

    monkeypatch.setattr(paired.WarmWorkers, "__init__", init)
    monkeypatch.setattr(paired.WarmWorkers, "take", took)
    monkeypatch.setattr(paired.WarmWorkers, "ready", readied)
    for warm_env in ("1", "0"):
        monkeypatch.setenv("KERNELWATCH_WARM_WORKERS", warm_env)
        started.clear(), taken.clear(), waited.clear()
        base = BaseCommit(
            Checkouts(tmp_path / "cache"), str(repo), sha, tmp_path / "cache", lambda suite: 1
        )
        recs, lines = records(), []
        try:
            with WarmWorkers(head, []) as warm:
                found = doubtful.time_wandering(head, list(recs), recs, [], 5, {}, warm, Seen(),
                                                lines.append, lambda: None, base)  # fmt: skip
            left = base.warm
        finally:
            base.close()
        assert found is not None
        assert left is None or not left.waiting
        ahead = [s for s in started if s[1]]
        if warm_env == "0":
            assert ahead == [] and taken == []
            continue
        assert sorted(name == head.root.name for name, _, _ in ahead) == [False, True]
        assert all(wanted == [("time", 5), ("time", 6)] and not context
                   for _, wanted, context in ahead), started  # fmt: skip
        assert len(taken) == 4 and all(got for _, _, got in taken), taken
        assert sorted(waited) == sorted(name for name, _, _ in ahead)  # both, before any pair
        assert [seed for _, seed, _ in taken] == [5, 5, 6, 6]
        assert all(o.status == "ok" for o in recs["fma[n=256]"].timings)

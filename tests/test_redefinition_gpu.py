"""A workload redefined in place, on a real GPU through the real webhook, runner and service.

A temporary repository of this tree's suite whose first commit makes the large dropout's launch
setting a parameter (`Dropout(1 << 25, 0.1, blocks=2112)`: the grid the suite launches today);
the second launches the same kernel on the same work with one block per SM (`blocks=132`), which
starts a new series and retires the old; the third changes no kernel and settles the second's
pending verdict. The new series' first result is judged against the old series' level: on the
commit's metrics, in an alert whose confirmation measures each side as it was defined. Beside
it, the change as an instrument of the test's own measures it (both grids of the same cubin in
one process, interleaved A B / B A, L2 flushed, CUDA events).

Marked `gpu`: skipped with the reason where CuPy or a GPU is missing (tests/conftest.py).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.e2e import agent_process, job, push, tail, wait_for
from tests.runner.gitrepo import commit_all, git
from tests.test_end_to_end_gpu import (  # noqa: F401
    REPOSITORY,
    ROOT,
    _alerts_settled,
    _finished,
    _python,
    service,
)

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]

BLOCKS_BEFORE, BLOCKS_AFTER = 2112, 132  # the suite's grid for 2^25 elements; one per SM
ONLY = r"^dropout\[blocks=|^transpose\[cols=70,rows=33\]"  # the transpose: a control
EDITS = {
    "kernels/ops.py": [
        ("def dropout(lib, x, y, p: float, seed: int) -> None:",
         "def dropout(lib, x, y, p: float, seed: int, blocks: int | None = None) -> None:"),
        ("    blocks = max(1, min(_cdiv(groups, 256), 132 * 16))",
         "    blocks = blocks or max(1, min(_cdiv(groups, 256), 132 * 16))"),
    ],
    "kernels/memory.py": [
        ("    def __init__(self, n: int, p: float, *, tags: tuple[str, ...] = ()):\n"
         "        super().__init__(tags=tags, n=n, p=p)\n"
         "        self.n, self.p = n, p",
         "    def __init__(self, n: int, p: float, *, blocks: int | None = None,\n"
         "                 tags: tuple[str, ...] = ()):\n"
         "        super().__init__(tags=tags, n=n, p=p, **({'blocks': blocks} if blocks else {}))\n"
         "        self.n, self.p, self.blocks = n, p, blocks"),
        ('self.workload.p, self.seed)', 'self.workload.p, self.seed, self.workload.blocks)'),
    ],
    "kernels/workloads.py": [
        ('Dropout(1 << 25, 0.1, tags=("memory",))',
         f'Dropout(1 << 25, 0.1, blocks={BLOCKS_BEFORE}, tags=("memory",))'),
    ],
}  # fmt: skip


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name} changed: update the redefinition test's edit"
    path.write_text(text.replace(old, new))


def grid_as_parameter(path: Path) -> str:
    """A repository of this tree's suite whose dropout's grid is a parameter: its commit."""
    path.mkdir()
    shutil.copy2(ROOT / "kernelwatch.toml", path / "kernelwatch.toml")
    shutil.copytree(
        ROOT / "kernels", path / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name, edits in EDITS.items():
        for old, new in edits:
            edit(path / name, old, new)
    git(path, "init", "-q", "-b", "main")
    return commit_all(path, "dropout: its launch's grid a parameter")


def suite_repo(path: Path) -> tuple[Path, str, str, str]:
    """This tree's suite with the dropout's grid a parameter, that grid redefined in place, and
    a commit that changes no kernel."""
    first = grid_as_parameter(path)
    edit(path / "kernels" / "workloads.py", f"blocks={BLOCKS_BEFORE}", f"blocks={BLOCKS_AFTER}")
    second = commit_all(path, "dropout: one block per SM")
    (path / "NOTES.md").write_text("The dropout runs one block per SM.\n")
    third = commit_all(path, "notes: no kernel changes")
    return path, first, second, third


def measured_change(build_dir: Path) -> float:
    """The change from BLOCKS_BEFORE to BLOCKS_AFTER by the test's own instrument: both grids of
    one cubin on the same buffers, A B / B A, L2 flushed before every sample, CUDA events."""
    import cupy as cp

    from kernels.build import build
    from kernels.ops import dropout_args

    built = build(build_dir, only=("dropout.cu",))
    kernel = cp.RawModule(path=built.cubins["dropout.cu"]).get_function("dropout_fwd")
    n = 1 << 25
    x, y = cp.random.standard_normal(n, dtype=cp.float32), cp.empty(n, cp.float32)
    flush = cp.empty(256 << 20, cp.uint8)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    args = (x, y, np.int64(n), *dropout_args(0.1, 7))

    def sample(blocks: int) -> float:
        flush.fill(0)
        start.record()
        kernel((blocks,), (256,), args)
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end)

    times: dict[int, list[float]] = {BLOCKS_BEFORE: [], BLOCKS_AFTER: []}
    for blocks in times:
        for _ in range(5):
            sample(blocks)
    for r in range(8):
        order = (BLOCKS_BEFORE, BLOCKS_AFTER) if r % 2 == 0 else (BLOCKS_AFTER, BLOCKS_BEFORE)
        for blocks in order:
            times[blocks] += [sample(blocks) for _ in range(10)]
    return float(np.median(times[BLOCKS_AFTER]) / np.median(times[BLOCKS_BEFORE]) - 1)


def pushed_to_agent(
    url: str,
    env: dict,
    repo: Path,
    pushes: list[list[str]],
    settled: Callable[[str], bool],
    tmp_path: Path,
) -> None:
    """Each push (its commits, oldest first) signed to the service and its head's job done by
    a real agent on this GPU, then every job that follows until `settled`."""
    token = subprocess.run(
        _python("service.cli", "runner-token", "create", "gpu-runner", "--labels", "gpu=any"),
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with agent_process(
        _python("runner.cli"), url, token, tmp_path, env, "--poll", "0.5", "--only", ONLY, cwd=ROOT
    ) as agent:
        try:
            for commits in pushes:
                (queued,) = push(url, repo, REPOSITORY, commits[-1], commits)
                wait_for(lambda queued=queued: _finished(url, queued), agent, timeout=300)
            wait_for(lambda: settled(url), agent, timeout=400)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nagent log:\n{tail(tmp_path / 'agent.log')}") from exc
    assert agent.returncode == 0, tail(tmp_path / "agent.log")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_launch_setting_redefined_in_place_is_judged_against_the_old_series(
    service,  # noqa: F811
    tmp_path: Path,
) -> None:
    url, env = service
    repo, first, second, third = suite_repo(tmp_path / "repo")
    pushed_to_agent(url, env, repo, [[first], [second], [third]], _alerts_settled, tmp_path)
    truth = measured_change(tmp_path / "truth-build")

    metrics = httpx.get(f"{url}/api/v1/commits/{second[:12]}/metrics").json()
    by_workload = {(w["workload"], w["params"].get("blocks")): w for w in metrics["workloads"]}
    new = by_workload[("dropout", BLOCKS_AFTER)]
    assert new["status"] == "ok" and new["correctness"]["passed"], new
    metric = new["kernels"][0]["metrics"][0]
    print(f"dropout blocks {BLOCKS_BEFORE} -> {BLOCKS_AFTER}: reported {metric['change']:+.1%} "
          f"({metric['verdict']}), the test's instrument {truth:+.1%}")  # fmt: skip
    assert metric["verdict"] == "regressed", metric["analysis"]
    assert metric["baseline"]["commit"] == first, metric  # the old series' result
    assert metric["analysis"]["redefined_from_series"] is not None, metric["analysis"]
    assert "redefined in place" in metric["analysis"]["note"], metric["analysis"]
    assert truth > 0.5, truth  # one block per SM leaves HBM idle: far slower
    assert 0.9 < (1 + metric["change"]) / (1 + truth) < 1.1, (metric["change"], truth)
    (gone,) = metrics["absent"]
    assert gone["params"]["blocks"] == BLOCKS_BEFORE and gone["verdict"] == "missing", gone
    assert f"measured as series {metric['series_id']}" in gone["note"], gone
    control = by_workload[("transpose", None)]["kernels"][0]["metrics"][0]
    assert control["verdict"] != "regressed" and abs(control["change"]) < 0.5, control

    alerts = httpx.get(f"{url}/api/v1/alerts").json()
    (alert,) = [a for a in alerts if a["state"] == "open"]
    assert alert["series"]["params"]["blocks"] == BLOCKS_AFTER, alert
    assert (alert["commit"], alert["base_commit"]) == (second, first)
    # The confirmation measured the old definition at the base and the new one at the head.
    assert 0.9 < (1 + alert["confirmed_change"]) / (1 + truth) < 1.1, (alert, truth)
    confirm_job = job(url, alert["confirm_job_id"])
    assert (confirm_job["kind"], confirm_job["state"]) == ("confirm", "succeeded")


def push_repo(path: Path) -> tuple[Path, list[str]]:
    """This tree's suite with the dropout's grid a parameter (commit 0), a line of notes
    (commit 1: the old definition's level has two runs), then three commits pushed at once: a
    README line, the grid redefined in place, a comment in the kernel's source."""
    shas = [grid_as_parameter(path)]
    (path / "NOTES.md").write_text("Notes.\n")
    shas.append(commit_all(path, "notes"))
    (path / "README.md").write_text("A suite.\n")
    shas.append(commit_all(path, "readme"))
    edit(path / "kernels" / "workloads.py", f"blocks={BLOCKS_BEFORE}", f"blocks={BLOCKS_AFTER}")
    shas.append(commit_all(path, "dropout: one block per SM"))
    source = path / "kernels" / "cuda" / "dropout.cu"
    source.write_text(source.read_text() + "\n// one block per SM since the last commit\n")
    shas.append(commit_all(path, "dropout: a comment"))
    return path, shas


def _bisected(url: str) -> bool:
    alerts = httpx.get(f"{url}/api/v1/alerts").json()
    return _alerts_settled(url) and all(
        (a.get("bisect") or {}).get("state") != "running" for a in alerts
    )


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_workload_redefined_inside_a_push_of_three_commits_is_bisected_to_its_commit(
    service,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The push's head (a comment) is measured and regressed against the old definition's
    level; the confirmation measures each side as defined; the bisection measures the README
    commit under the old definition and the redefining commit under the new one, each against
    the good commit's old definition, and names the redefining commit first bad."""
    url, env = service
    repo, shas = push_repo(tmp_path / "repo")
    pushed_to_agent(url, env, repo, [[shas[0]], [shas[1]], shas[2:]], _bisected, tmp_path)
    truth = measured_change(tmp_path / "truth-build")

    (alert,) = [a for a in httpx.get(f"{url}/api/v1/alerts").json() if a["state"] == "open"]
    alert = httpx.get(f"{url}/api/v1/alerts/{alert['id']}").json()
    readme, redefined, comment = shas[2:]
    bisect = alert["bisect"]
    tested = bisect["tested"]
    said = {
        sha: f"{t['change']:+.1%} ({'bad' if t['bad'] else 'good'})" for sha, t in tested.items()
    }
    print(
        f"dropout blocks {BLOCKS_BEFORE} -> {BLOCKS_AFTER} inside a push of three: alert at "
        f"{alert['commit'][:8]} {alert['change']:+.1%}, confirmed "
        f"{alert['confirmed_change']:+.1%}; bisect: readme {said.get(readme)}, redefinition "
        f"{said.get(redefined)}; first bad {(alert['first_bad_commit'] or '')[:8]}; "
        f"the test's instrument {truth:+.1%}"
    )
    assert (alert["commit"], alert["base_commit"]) == (comment, shas[1]), alert
    assert alert["series"]["params"]["blocks"] == BLOCKS_AFTER, alert
    assert bisect["state"] == "done", bisect
    assert alert["first_bad_commit"] == redefined, bisect
    assert not tested[readme]["bad"] and abs(tested[readme]["change"]) < 0.1, tested
    assert tested[redefined]["bad"], tested
    assert 0.9 < (1 + tested[redefined]["change"]) / (1 + truth) < 1.1, (tested, truth)
    assert 0.9 < (1 + alert["confirmed_change"]) / (1 + truth) < 1.1, (alert, truth)

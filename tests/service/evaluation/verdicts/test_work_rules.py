"""Rules the previous run and the work verdicts stand on, each pinned by a test that a one-line
break of the rule turns red (benchmarks/rule_mutations.py): of a commit measured twice the newer
run is the previous run of the next commit (its missing workloads, its work counters' base); a
work counter is judged against the previous run of the line, not an older one; and ncu's launch
figures are part of what determined a kernel's counters beside the runner's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.analysis.work import LAUNCH, MIN_PAIRS, WORK_COUNTERS, Capture, determinants, learn
from service.evaluation.verdicts.controls import controls
from service.models import Run, RunWorkload
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

INSTRUCTIONS, SECTORS, REQUESTS, L2_READ, DRAM_READ = WORK_COUNTERS
GRID = 132  # one block per SM of an H100


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def digest(kernel: str) -> str:
    """The runner's digest of a kernel whose code, inputs, host and tools never change."""
    return hashlib.sha256(kernel.encode()).hexdigest()


def post(
    client: httpx.Client,
    label: str,
    line: list[str],
    counters: dict[str, dict[str, float]],
    *,
    grid: dict[str, int] | None = None,
    seed: int = 0,
) -> dict:
    """The run of commit `label` (`line`: its first-parent ancestors, nearest first), one
    workload per kernel of `counters`, each profiled at this commit with those work counters
    and launched on `grid[kernel]` blocks (GRID where not given); the commit's metrics."""
    doc = document(
        commit=label,
        parents=line[:1],
        ancestors=line,
        minutes=len(line),
        medians=dict.fromkeys(counters, 100.0),
        seed=len(line) * 10 + seed,
    )
    for w in doc["workloads"]:
        kernel = w["kernels"][0]
        launch = {"launch__grid_size": (grid or {}).get(kernel, GRID), "launch__block_size": 256}
        values = {**counters[kernel], **launch}
        w["ncu"] = {"status": "ok", "kernels": [{
            "kernel": kernel,
            "metrics": {name: {"value": float(v), "unit": ""} for name, v in values.items()},
            "determinants": digest(kernel),
            "profiled_at": sha_for(label),
        }]}  # fmt: skip
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text
    return client.get(f"/api/v1/commits/{sha_for(label)}/metrics").json()


def work(metrics: dict, kernel: str = "k") -> dict[str, dict]:
    """The kernel's work verdicts by counter."""
    (found,) = [k for w in metrics["workloads"] for k in w["kernels"] if k["kernel"] == kernel]
    return {v["counter"]: v for v in found["work"]}


def test_a_workload_the_newer_run_of_a_commit_measured_is_missing_from_the_next_commit(
    client: httpx.Client,
) -> None:
    """The previous run of a line is the newest at its commit: what it measured and the next
    commit did not is reported missing there."""
    post(client, "c0", [], {"k": {}})
    post(client, "c1", ["c0"], {"k": {}})
    post(client, "c1", ["c0"], {"k": {}, "j": {}}, seed=7)  # measured again, with j this time
    head = post(client, "c2", ["c1", "c0"], {"k": {}})
    # With the older run of c1 taken for the previous run, j would go unmentioned.
    assert [(a["kernel"], a["verdict"]) for a in head["absent"]] == [("j", "missing")]
    assert head["absent"][0]["note"] == "measured by the previous run, not by this one"


def test_a_kernels_work_is_compared_with_the_newer_run_of_a_commit_measured_twice(
    client: httpx.Client,
) -> None:
    """c1's newer run is what c1 does (5% more instructions); c2 does the same: no notice, and
    its base is the newer run's count, not the older run's."""
    post(client, "c0", [], {"k": {INSTRUCTIONS: 1e6}})
    post(client, "c1", ["c0"], {"k": {INSTRUCTIONS: 1e6}})
    post(client, "c1", ["c0"], {"k": {INSTRUCTIONS: 1.05e6}}, seed=7)
    head = work(post(client, "c2", ["c1", "c0"], {"k": {INSTRUCTIONS: 1.05e6}}))
    assert head[INSTRUCTIONS]["base_value"] == 1.05e6
    assert head[INSTRUCTIONS]["verdict"] == "same", head


def test_a_kernels_work_is_compared_with_the_previous_run_not_an_older_one(
    client: httpx.Client,
) -> None:
    """A change of work is a notice at the commit that made it, once: the commit after it,
    doing the same, is compared with it and is the same (against c0 it would be +5% again)."""
    line: list[str] = []
    got = []
    for i, count in enumerate([1e6, 1e6, 1.05e6, 1.05e6]):
        got.append(work(post(client, f"c{i}", line[::-1], {"k": {INSTRUCTIONS: count}})))
        line.append(f"c{i}")
    assert [w[INSTRUCTIONS]["verdict"] for w in got] == ["new", "same", "changed", "same"]
    assert [w[INSTRUCTIONS]["base_value"] for w in got] == [None, 1e6, 1e6, 1.05e6]


@pytest.mark.parametrize("figure", LAUNCH)
def test_one_runner_digest_launched_otherwise_is_not_the_same_determinants(figure: str) -> None:
    """The runner's digest does not see a launch chosen at run time (a grid sized by a
    heuristic, a block size from an autotuner); ncu's launch figures do."""
    runner_key = digest("k")
    launched = [determinants(runner_key, {figure: {"value": v}}) for v in (128, 256, 128)]
    assert launched[0] != launched[1] and launched[0] == launched[2]
    assert determinants(None, {figure: {"value": 128}}) is None


def test_captures_of_one_runner_digest_on_other_grids_teach_no_noise() -> None:
    """L2 reads moving with the grid are the launch's work, not the noise of unchanged code:
    they teach nothing, while the same moves on one grid are pairs that do."""
    grids = [GRID, 2 * GRID, 4 * GRID, 8 * GRID]

    def history(grid_of: list[int]) -> list[Capture]:
        return [
            Capture(
                determinants(digest("k"), {"launch__grid_size": {"value": g}}),
                f"{i:040x}",
                {L2_READ: 1e6 * (1 + 0.1 * i)},
            )
            for i, g in enumerate(grid_of)
        ]

    assert learn(history(grids))[L2_READ].pairs == 0
    assert learn(history([GRID] * len(grids)))[L2_READ].pairs == len(grids) - 1


def test_a_counter_learned_across_grids_of_one_runner_digest_stays_learning(
    client: httpx.Client,
) -> None:
    """Through the service: a kernel whose grid a heuristic picks anew at every commit, its L2
    reads moving 10% with it; no two of its captures share a launch, so its L2 reads are never
    shown steady and give no verdict but "learning"."""
    line: list[str] = []
    for i in range(MIN_PAIRS + 2):
        counters = {"k": {INSTRUCTIONS: 1e6, L2_READ: 1e6 * (1 + 0.1 * i)}}
        head = work(post(client, f"c{i}", line[::-1], counters, grid={"k": GRID << i}))
        line.append(f"c{i}")
    assert head[L2_READ]["pairs"] == 0
    assert head[L2_READ]["verdict"] == "learning", head[L2_READ]


def test_a_kernel_launched_on_another_grid_is_no_control_of_the_runs_offset(
    client: httpx.Client, engine: Engine
) -> None:
    """A run's offset is measured only on kernels nothing changed since their baseline: one
    whose runner digest is the same but whose grid is not is no control; its neighbour, the
    same in both, is."""
    post(client, "c0", [], {"k": {INSTRUCTIONS: 1e6}, "j": {INSTRUCTIONS: 1e6}})
    post(client, "c1", ["c0"], {"k": {INSTRUCTIONS: 1e6}, "j": {INSTRUCTIONS: 1e6}},
         grid={"k": 2 * GRID})  # fmt: skip
    with Session(engine) as session:
        base, head = session.scalars(select(Run.id).order_by(Run.id)).all()
        rows = session.execute(
            select(RunWorkload.params, RunWorkload.params_key).where(RunWorkload.run_id == head)
        ).all()
        key = {params["act"]: params_key for params, params_key in rows}
        workloads = {kernel: ("gemm_fwd", key[kernel], [base]) for kernel in ("k", "j")}
        assert controls(session, head, workloads) == {"j"}

"""Why a workload got slower (service.evaluation.alerts.attribution), on runs of the example
document stored through a real server on SQLite and PostgreSQL: kernels paired by name, their
times from the kernel timeline where both runs have one (else ncu's), the kernels whose time
grew named with their share of the slowdown and those under MIN_KERNEL_SHARE left out; where
nothing that determines the kernels changed, the time said to have gone around them, with the
timeline's evidence; and on plain counters, the head's top warp stalls beside the base's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service.evaluation.alerts.attribution import attribute, kernel_changes, top_stalls
from service.models import Run, Series
from tests.conftest import ADMIN_TOKEN
from tests.dashboards.conftest import rich_document
from tests.live_server import LiveServer

STEP = "train_step batch=256 d_hidden=4096 d_in=1024 d_out=1024 p_drop=0.1"
CHANGED = "gemm_bwd_nt_dinput"
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post_pair(client: httpx.Client, head: dict[str, Any] | None = None) -> None:
    """r0, then r1 with the training step 12% slower (`head`: r1 as the test changed it)."""
    base = rich_document("r0", index=0, history=[])
    for doc in (base, head or slower_step()):
        assert client.post("/api/v1/runs", json=doc).status_code == 201


def slower_step() -> dict[str, Any]:
    return rich_document("r1", index=1, history=["r0"], slower={"train_step": 1.12})


def attribution(engine: Engine, with_base: bool = True) -> dict[str, Any]:
    """The training step's attribution at r1 against r0 (or against no base run)."""
    with Session(engine) as session:
        series = session.scalars(select(Series).where(Series.workload == "train_step")).one()
        base, head = session.scalars(select(Run).order_by(Run.id)).all()
        return attribute(session, series, head, base if with_base else None, 0.12)


def test_kernels_nothing_changed_say_the_time_went_around_them(
    client: httpx.Client, engine: Engine
) -> None:
    post_pair(client)
    found = attribution(engine)
    assert found["same_kernels"] is True and found["kernel_times"] == "timeline"
    host = found["host_time"]
    assert host["kernels_us"][0] == pytest.approx(host["kernels_us"][1])
    assert host["between_us"][1] > host["between_us"][0]
    assert found["summary"].startswith(
        f"{STEP} +12.0%: the kernels are the same as in the base run (their compiled code, "
        "launch and inputs); the time went to the host code around them or the environment: "
        "in the kernel timeline the kernels took"
    )
    assert (found["base_run"], found["head_run"]) == tuple(
        client.get("/api/v1/runs").json()[i]["run_id"] for i in (1, 0)
    )


def test_the_kernel_whose_time_grew_is_named_with_its_share(
    client: httpx.Client, engine: Engine
) -> None:
    head = slower_step()
    (step,) = [w for w in head["workloads"] if w["name"] == "train_step"]
    # Its code changed (another digest) and its timeline time grew by half; the others held.
    (capture,) = [k for k in step["ncu"]["kernels"] if k["kernel"] == CHANGED]
    capture["determinants"] = "f" * 64
    (entry,) = [k for k in step["timeline"]["kernels"] if k["kernel"] == CHANGED]
    entry["total_ns"] *= 1.5
    post_pair(client, head)
    found = attribution(engine)
    assert found["same_kernels"] is False and found["kernel_times"] == "timeline"
    (named,) = found["kernels"]  # the kernels that did not grow share none of the slowdown
    assert (named["kernel"], named["share"]) == (CHANGED, 1.0)
    assert named["change"] == pytest.approx(0.5)
    assert f"{STEP} +12.0%: kernel {CHANGED} +50%" in found["summary"]


def test_without_a_base_run_nothing_is_paired(client: httpx.Client, engine: Engine) -> None:
    post_pair(client)
    found = attribution(engine, with_base=False)
    assert (found["base_run"], found["kernel_times"], found["same_kernels"]) == (None, "ncu", False)
    assert (found["software"], found["choices"], found["kernels"]) == ([], [], [])


def test_kernels_share_the_slowdown_by_how_much_each_grew() -> None:
    rows = kernel_changes(["a", "b", "c"], {"a": 100, "b": 100, "c": 100},
                          {"a": 130, "b": 110, "c": 90}, 0.1)  # fmt: skip
    assert [(r["kernel"], r["share"]) for r in rows] == [
        ("a", pytest.approx(0.75)), ("b", pytest.approx(0.25)), ("c", 0.0)]  # fmt: skip
    # One kernel takes the workload's measured change; a speed-up leaves it no slowdown.
    (only,) = kernel_changes(["k"], {}, {}, -0.04)
    assert (only["change"], only["share"]) == (-0.04, 0.0)


def test_the_heads_top_three_stalls_come_with_the_bases_values() -> None:
    head = {STALL.format(r): v for r, v in
            [("long_scoreboard", 9.0), ("barrier", 4.0), ("math_pipe_throttle", 2.0),
             ("wait", 1.0), ("selected", 50.0)]}  # fmt: skip
    head["sm__warps_active.avg.pct_of_peak_sustained_active"] = 80.0
    base = {STALL.format("long_scoreboard"): 3.0}
    # "selected" is the warp that issues: no stall, however large.
    assert top_stalls(base, head) == [
        {"reason": "long scoreboard", "base": 3.0, "head": 9.0},
        {"reason": "barrier", "base": None, "head": 4.0},
        {"reason": "math pipe throttle", "base": None, "head": 2.0},
    ]

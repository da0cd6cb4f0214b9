"""Verdicts on series whose runs wander, through the real service over HTTP, on SQLite and
PostgreSQL: per duration class a kernel whose timing processes sit apart while each one's
samples sit tight (a spilling SGEMM, an L2-bound kernel, short kernels whose whole runs now and
then sit off together), beside a steady one, and a steady kernel whose first run after the shift
and after the fix sits 3% off as a whole (as four short kernels' runs did together on an H200):
a level of one run does not know that wander, so only the next run can tell it apart from a
change. All shift at one commit (the wandering ones by half again, as a commit that makes a
kernel spill; the steady ones by their class's detection target), six innocent commits follow,
then the fix and two more. Every innocent commit must end unchanged (a young level's pending
verdicts settled by the next run), every shift regressed and every fix improved, in order and
posted as a burst alike."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import Engine

from tests.conftest import ADMIN_TOKEN
from tests.history import (
    LONG,
    MID,
    SHORT,
    WANDERING_LONG,
    WANDERING_MID,
    WANDERING_SHORT,
    Line,
)
from tests.live_server import LiveServer
from tests.service.histories.test_step_and_fix import (  # noqa: F401
    FakeRunner,
    admin,
    live,
    new_runner,
    settle,
    verdicts,
)

KERNELS = {
    "spill": WANDERING_LONG,
    "l2": WANDERING_MID,
    "tiny": WANDERING_SHORT,
    "long": LONG,
    "mid": MID,
    "short": SHORT,
    "blip": LONG,
    "late": LONG,
}
BASE = {"spill": 4200.0, "l2": 48.0, "tiny": 3.5, "long": 92.0, "mid": 30.0, "short": 5.0,
        "blip": 80.0, "late": 70.0}  # fmt: skip
# The shift: half again for the wandering kernels; each class's detection target for the
# steady ones (2% / 5% / 10%).
SHIFT = {"spill": 1.5, "l2": 1.5, "tiny": 1.5, "long": 1.02, "mid": 1.05, "short": 1.10,
         "blip": 1.3, "late": 1.3}  # fmt: skip
STEP, FIX, N = 8, 15, 18
BLIPS = (STEP + 1, FIX + 1)  # the blip kernel's whole run sits 3% slow there
# The late kernel's first two runs after the shift agree as closely as before it, its third
# sits 4% slow as a whole: a level that began at a shift is young until its third result
# (service.analysis.wander.min_level), as a tiled SGEMM made to spill was on an H200.
LATE = STEP + 2


def at(i: int) -> dict[str, float]:
    levels = code(i)
    if i in BLIPS:
        levels["blip"] *= 1.03
    if i == LATE:
        levels["late"] *= 1.04
    return levels


def code(i: int) -> dict[str, float]:
    """What base and head interleaved measure of commit i: its code's level, no run's offset."""
    shifted = STEP <= i < FIX
    return {k: level * (SHIFT[k] if shifted else 1.0) for k, level in BASE.items()}


def expected(i: int) -> str:
    return {0: "new", STEP: "regressed", FIX: "improved"}.get(i, "unchanged")


def assert_story(got: list[dict[str, str]]) -> None:
    wrong = [(i, k, v) for i, row in enumerate(got) for k, v in row.items() if v != expected(i)]
    assert not wrong, wrong


@pytest.mark.parametrize("seed", [1, 2])
def test_wandering_series_through_a_shift_six_innocent_commits_and_the_fix(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
    seed: int,
) -> None:
    line = Line(KERNELS, repository=f"acme/wander-{seed}", seed=seed)
    with live.client(new_runner(engine, "h100-a")) as client:
        runner = FakeRunner(client, line, at, code)
        for i in range(N):
            assert admin.post("/api/v1/runs", json=line.document(i, at(i))).status_code == 201
            settle(engine)
            runner.work()  # the shift's confirmations
            settle(engine)
    assert_story(verdicts(admin, line, N))
    alerts = admin.get("/api/v1/alerts", params={"repository": line.repository}).json()
    fixed = [a for a in alerts if a["state"] == "fixed"]
    assert sorted(a["series"]["kernel"] for a in fixed) == sorted(KERNELS)
    assert {a["commit"] for a in fixed} == {line.sha(STEP)}
    # The fixed level's first run, sitting 3% slow as a whole, was confirmed at once and not
    # reproduced (after the shift, the shift's alert was the blip's own and still active).
    doubts = [(a["series"]["kernel"], a["commit"], a["state"]) for a in alerts if a not in fixed]
    assert doubts == [("blip", line.sha(FIX + 1), "dismissed")]


def test_a_burst_of_them_in_any_order_decides_the_same(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    line = Line(KERNELS, repository="acme/wander-burst", seed=3)
    order = list(range(N))
    random.Random(3).shuffle(order)
    with live.senders(ADMIN_TOKEN) as senders, ThreadPoolExecutor(6) as pool:
        posted = pool.map(lambda i: senders.post("/api/v1/runs", json=line.document(i, at(i))),
                          order)  # fmt: skip
        assert {answer.status_code for answer in posted} == {201}
    settle(engine)
    assert_story(verdicts(admin, line, N))

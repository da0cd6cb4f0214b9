"""One series' own change is never taken for its run's offset, through the real service over
HTTP on SQLite and PostgreSQL.

A change to the Python around a workload's kernels (a synchronize, host work between them)
moves its time while its kernels' code, launch and inputs stay the same: its captures say
nothing changed, so it is a control of its run's offset like the series beside it. Here one
long series steps x1.06 (or x1.5) at STEP and comes back at BACK while the others keep their
level, every capture with the same determinants throughout: the series that did not change
must get no verdict at any commit (its step is its own, not a run that sat off), in runs of two,
three and five series of its class, and among short kernels.
"""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import Engine

from tests.history import Line, Noise
from tests.live_server import LiveServer
from tests.service.histories.test_step_and_fix import admin, live, metrics_at, settle  # noqa: F401

STEP, BACK, N = 8, 15, 17
# Series that only carry 0.2% sample noise: the run offsets their own steps would fake are
# evident against such tight runs.
TIGHT_LONG = Noise(process=0.0005, sample=0.002, samples=30, processes=3)
TIGHT_SHORT = Noise(process=0.002, sample=0.01, samples=60, processes=6)
LONG_LEVELS = [97.0, 571.0, 250.0, 130.0, 410.0]
SHORT_LEVELS = [4.0, 5.5, 7.0]


def post(client: httpx.Client, engine: Engine, line: Line, levels: list[dict[str, float]]) -> None:
    """The history: `moved` (the first series) steps by `factor` at STEP and is back at BACK."""
    for i in range(N):
        doc = line.document(i, levels[i])
        for w in doc["workloads"]:
            kernel = w["kernels"][0]
            w["ncu"] = {"status": "ok", "kernels": [{
                "kernel": kernel,
                "metrics": {"smsp__inst_executed.sum": {"value": 1e6, "unit": "inst"}},
                # Nothing that determines the kernel changes: its code, launch and inputs.
                "determinants": hashlib.sha256(kernel.encode()).hexdigest(),
                "profiled_at": line.sha(i),
            }]}  # fmt: skip
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        settle(engine)


def history(base: dict[str, float], moved: str, factor: float) -> list[dict[str, float]]:
    return [
        {k: v * (factor if k == moved and STEP <= i < BACK else 1.0) for k, v in base.items()}
        for i in range(N)
    ]


@pytest.mark.parametrize(
    ("series", "factor"),
    [(2, 1.06), (2, 1.5), (3, 1.06), (5, 1.06), (5, 1.5), ("short", 1.5)],
    ids=["two-x1.06", "two-x1.5", "three-x1.06", "five-x1.06", "five-x1.5", "short-x1.5"],
)
def test_a_series_own_step_and_return_move_no_other_verdict(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
    series: int | str,
    factor: float,
) -> None:
    if series == "short":
        base = {f"s{j}": level for j, level in enumerate(SHORT_LEVELS)}
        noise = TIGHT_SHORT
    else:
        base = {f"k{j}": level for j, level in enumerate(LONG_LEVELS[:series])}
        noise = TIGHT_LONG
    moved = next(iter(base))
    line = Line(dict.fromkeys(base, noise), repository=f"acme/own-{series}-{factor}", seed=3)
    post(admin, engine, line, history(base, moved, factor))
    for i in range(1, N):
        got = metrics_at(admin, line, i)
        for kernel, m in got.items():
            if kernel == moved:
                continue
            assert m["verdict"] == "unchanged", (i, kernel, m["change"], m["analysis"]["note"])
            assert abs(m["change"]) < 0.01, (i, kernel, m["change"], m["analysis"]["note"])
    assert metrics_at(admin, line, STEP)[moved]["verdict"] in ("regressed", "pending")
    assert metrics_at(admin, line, BACK)[moved]["verdict"] in ("improved", "pending")


def test_a_series_that_moved_while_its_kernels_did_not_says_where_the_time_went(
    live: LiveServer,  # noqa: F811
    engine: Engine,
    admin: httpx.Client,  # noqa: F811
) -> None:
    """A synchronize added between a workload's kernels: +6% while the kernels' determinants
    and their time in the timeline stay the same. Its verdict says the kernels are the same,
    and its alert where the time went: between and around the kernels, from the timeline."""
    base = {f"k{j}": level for j, level in enumerate(LONG_LEVELS[:3])}
    moved = "k0"
    line = Line(dict.fromkeys(base, TIGHT_LONG), repository="acme/host-code", seed=4)
    levels = history(base, moved, 1.06)
    for i in range(STEP + 1):
        doc = line.document(i, levels[i])
        for w in doc["workloads"]:
            kernel = w["kernels"][0]
            w["ncu"] = {"status": "ok", "kernels": [{
                "kernel": kernel, "metrics": {},
                "determinants": hashlib.sha256(kernel.encode()).hexdigest(),
                "profiled_at": line.sha(0),
            }]}  # fmt: skip
            # The kernel's own time per launch does not move: 90% of its base level.
            kernel_ns = base[kernel] * 900
            w["timeline"] = {"source": "cupti", "reason": "", "kernels": [
                {"kernel": kernel, "calls": 1, "total_ns": kernel_ns, "share": 1.0}]}  # fmt: skip
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
        settle(engine)
    step = metrics_at(admin, line, STEP)
    assert step[moved]["verdict"] == "regressed", step[moved]["analysis"]
    assert "its kernels are the same as in its baseline" in step[moved]["analysis"]["note"]
    assert "host code around them or the environment" in step[moved]["analysis"]["note"]
    for kernel in set(base) - {moved}:
        assert step[kernel]["verdict"] == "unchanged", step[kernel]["analysis"]
    (alert,) = admin.get("/api/v1/alerts").json()
    alert = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert "the kernels are the same as in the base run" in alert["summary"], alert["summary"]
    host = alert["attribution"]["host_time"]
    kernels_us, between_us = host["kernels_us"], host["between_us"]
    assert kernels_us[0] == kernels_us[1] == base[moved] * 0.9
    # The time between the kernels took the whole step: 10% of the level, then 16%.
    assert abs(between_us[0] - 0.10 * base[moved]) < 0.01 * base[moved], host
    assert abs(between_us[1] - 0.16 * base[moved]) < 0.01 * base[moved], host
    assert f"{between_us[0]:.1f} → {between_us[1]:.1f} us" in alert["summary"]
    page = admin.get("/alerts").text
    assert "The kernels are the same as in the base run" in page

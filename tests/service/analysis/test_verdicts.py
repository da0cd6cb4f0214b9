"""Verdicts at ingest, over real HTTP on SQLite and PostgreSQL, and the statistics behind them."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from service.analysis.decision import decide
from service.analysis.verdicts import class_floor, compare, noise_floor
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.documents import post_history as history
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def verdicts_at(client: httpx.Client, label: str) -> dict[str, dict]:
    metrics = client.get(f"/api/v1/commits/{sha_for(label)}/metrics").json()
    return {
        k["kernel"]: k["metrics"][0]
        for w in metrics["workloads"]
        for k in w["kernels"]
        if k["metrics"]
    }


def test_regression_improvement_and_noise_are_told_apart(client: httpx.Client) -> None:
    base = {"slower": 100.0, "faster": 100.0, "same": 100.0, "tiny": 100.0}
    labels = history(client, 8, base)
    head = document(
        commit="head",
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=100,
        medians={"slower": 104.0, "faster": 95.0, "same": 100.0, "tiny": 100.8, "brand_new": 10.0},
        seed=99,
    )
    assert client.post("/api/v1/runs", json=head).status_code == 201
    got = verdicts_at(client, "head")
    assert got["slower"]["verdict"] == "regressed"
    assert got["slower"]["analysis"]["change"] == pytest.approx(0.04, abs=0.005)
    assert got["slower"]["analysis"]["baseline_results"] == 8
    assert got["slower"]["analysis"]["q_value"] < 0.01
    assert got["faster"]["verdict"] == "improved"
    assert got["same"]["verdict"] == "unchanged"
    # Significant (thousands of samples) but below the 2% floor of a >= 50 us kernel.
    assert got["tiny"]["verdict"] == "unchanged"
    assert got["brand_new"]["verdict"] == "new"
    first = verdicts_at(client, "c0")
    assert first["same"]["verdict"] == "new"


def test_the_baseline_follows_the_first_parent_line_not_other_branches(
    client: httpx.Client,
) -> None:
    labels = history(client, 6, {"k": 100.0})
    # A side branch that was much slower: later in time, but not an ancestor of the head.
    side = document(
        commit="side",
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=50,
        branch="experiment",
        medians={"k": 200.0},
    )
    assert client.post("/api/v1/runs", json=side).status_code == 201
    head = document(
        commit="head",
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=60,
        medians={"k": 100.0},
        seed=7,
    )
    assert client.post("/api/v1/runs", json=head).status_code == 201
    assert verdicts_at(client, "head")["k"]["verdict"] == "unchanged"
    assert verdicts_at(client, "side")["k"]["verdict"] == "regressed"


def test_broken_and_missing_series(client: httpx.Client) -> None:
    labels = history(client, 3, {"a": 100.0, "b": 100.0, "c": 100.0})
    head = document(
        commit="head",
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=10,
        medians={"a": 100.0, "b": 100.0},
    )
    broken = head["workloads"][1]
    broken.update(status="correctness_failed", timing=None, error="relative L2 error 0.3")
    broken["correctness"].update(passed=False, error_norm=0.3)
    assert client.post("/api/v1/runs", json=head).status_code == 201
    metrics = client.get(f"/api/v1/commits/{sha_for('head')}/metrics").json()
    absent = {a["kernel"]: a for a in metrics["absent"]}
    assert absent["b"]["verdict"] == "broken"
    assert "correctness_failed" in absent["b"]["note"]
    assert absent["c"]["verdict"] == "missing"
    assert metrics["verdict_counts"] == {"unchanged": 1, "broken": 1, "missing": 1}


def test_a_failed_build_breaks_every_series(client: httpx.Client) -> None:
    labels = history(client, 2, {"a": 100.0, "b": 50.0})
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=10)
    head.update(status="build_failed", workloads=[])
    head["build"].update(status="failed", log_tail="gemm.cu(12): error: expected a ';'")
    assert client.post("/api/v1/runs", json=head).status_code == 201
    metrics = client.get(f"/api/v1/commits/{sha_for('head')}/metrics").json()
    assert {a["kernel"]: a["verdict"] for a in metrics["absent"]} == {"a": "broken", "b": "broken"}


def test_floors() -> None:
    # Half of each class's detection target (2% / 5% / 10%): benchmarks/signal_quality.py.
    assert (class_floor(1000.0), class_floor(50.0), class_floor(20.0), class_floor(5.0)) == (
        0.01,
        0.01,
        0.025,
        0.05,
    )
    assert noise_floor([100.0, 100.0]) == 0.0  # too few runs to say
    assert noise_floor([100.0, 101.0, 99.0, 100.0]) == pytest.approx(3 * 0.5 * 1.4826 / 100)


def test_aa_comparisons_rarely_alarm() -> None:
    rng = np.random.default_rng(1)
    comparisons = []
    for key in range(200):
        base = [
            100 * (1 + 0.003 * rng.standard_normal(30)) * (1 + 0.002 * rng.standard_normal())
            for _ in range(8)
        ]
        head = 100 * (1 + 0.003 * rng.standard_normal(30)) * (1 + 0.002 * rng.standard_normal())
        comparisons.append(compare(key, head, base))
    verdicts = [d.verdict for d in decide(comparisons)]
    assert verdicts.count("unchanged") == 200


def test_too_little_baseline_is_no_comparison() -> None:
    assert compare(1, np.ones(10), [np.ones(2)]) is None
    assert compare(1, np.ones(2), [np.ones(30)]) is None

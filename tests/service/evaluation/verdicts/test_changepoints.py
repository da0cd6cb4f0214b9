"""Change points: the detector on synthetic series, and at ingest over HTTP on both databases."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest

from service.analysis import steps
from service.analysis.steps import detect
from service.analysis.verdicts import class_floor
from service.evaluation.verdicts import changepoints
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def noisy(level: float, n: int, spread: float, seed: int) -> np.ndarray:
    return level * (1 + spread * np.random.default_rng(seed).standard_normal(n))


# --- the pure function -------------------------------------------------------------------------


def test_a_step_is_found_at_its_first_point_with_segment_medians() -> None:
    x = np.r_[noisy(100.0, 12, 0.003, 1), noisy(110.0, 8, 0.003, 2)]
    (shift,) = detect(x)
    assert shift.index == 12
    assert shift.before_median == pytest.approx(np.median(x[:12]))
    assert shift.after_median == pytest.approx(np.median(x[12:]))
    assert shift.change == pytest.approx(0.10, abs=0.01)


def test_short_constant_and_degenerate_series_have_none() -> None:
    assert detect([]) == []
    assert detect([100.0]) == []
    assert detect([100.0, 200.0, 100.0, 200.0, 100.0]) == []  # fewer than 2 x 3 points
    assert detect([100.0] * 50) == []
    assert detect([100.0] * 6 + [float("nan")]) == []
    assert detect([0.0] * 10 + [5.0] * 10) == []  # no level to be relative to


def test_a_step_is_reported_once_three_points_follow_it() -> None:
    assert detect([100.0] * 12 + [110.0] * 2) == []
    (shift,) = detect([100.0] * 12 + [110.0] * 3)
    assert (shift.index, shift.before_median, shift.after_median) == (12, 100.0, 110.0)
    assert shift.change == pytest.approx(0.1)


def test_two_steps_and_a_return() -> None:
    x = np.r_[noisy(100.0, 15, 0.003, 3), noisy(110.0, 15, 0.003, 4), noisy(95.0, 15, 0.003, 5)]
    assert [s.index for s in detect(x)] == [15, 30]
    assert [s.change > 0 for s in detect(x)] == [True, False]
    assert [s.index for s in detect([100.0] * 10 + [110.0] * 3 + [120.0] * 10)] == [10, 13]


def test_noise_and_outliers_are_not_change_points() -> None:
    for seed in range(200):
        rng = np.random.default_rng(seed)
        x = noisy(100.0, 30, float(rng.uniform(0.002, 0.01)), seed)
        assert detect(x) == [], seed
    x = noisy(100.0, 40, 0.003, 7)
    x[20] = 150.0
    assert detect(x) == []  # one slow run
    x[21] = 150.0
    assert detect(x) == []  # two: shorter than a segment
    x[39] = 150.0
    assert detect(x) == []  # at the head


def test_the_floor_follows_the_duration_class_and_the_noise() -> None:
    long, short = class_floor(100.0), class_floor(5.0)
    assert detect([100.0] * 10 + [100.0 * (1 + 1.5 * long)] * 10)[0].index == 10
    assert detect([100.0] * 10 + [100.0 * (1 + 0.8 * long)] * 10) == []
    assert detect([5.0] * 10 + [5.0 * (1 + 1.5 * short)] * 10)[0].index == 10
    assert detect([5.0] * 10 + [5.0 * (1 + 0.8 * short)] * 10) == []
    # 4% is a change for a 100 us kernel, not for a 5 us one: short kernels are noisier.
    assert len(detect([100.0] * 10 + [104.0] * 10)) == 1
    assert detect([5.0] * 10 + [5.2] * 10) == []
    # 3% at 2% noise between runs is inside 3 x the noise.
    x = np.r_[noisy(100.0, 20, 0.02, 8), noisy(103.0, 20, 0.02, 9)]
    assert detect(x) == []


def test_the_screen_never_hides_a_change_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_may_shift` only skips series where segmenting would find nothing anyway."""
    rng = np.random.default_rng(11)
    series = []
    for _ in range(300):
        n = int(rng.integers(6, 80))
        x = noisy(
            float(rng.choice([5.0, 20.0, 100.0])),
            n,
            float(rng.uniform(0.001, 0.03)),
            n + len(series),
        )
        x *= 1 + np.where(np.arange(n) >= rng.integers(0, n), rng.normal(0, 0.05), 0)
        x[rng.random(n) < 0.05] *= 1.2
        series.append(x)
    screened = [detect(x) for x in series]
    monkeypatch.setattr(steps, "_may_shift", lambda x, floor: True)
    assert [detect(x) for x in series] == screened
    assert sum(bool(s) for s in screened) > 30  # the sample does contain change points


# --- at ingest, over HTTP ----------------------------------------------------------------------


def post_line(
    client: httpx.Client, levels: list[dict[str, float]], *, keep: int | None = None, **kw
) -> list[str]:
    """Commits c0, c1, ... on one first-parent line, commit i measured at levels[i]; `keep`
    caps the ancestors each document sends, as the runner does."""
    labels: list[str] = []
    for i, medians in enumerate(levels):
        label = f"c{i}"
        ancestors = labels[::-1][:keep] if keep else labels[::-1]
        doc = document(
            commit=label,
            parents=labels[-1:],
            ancestors=ancestors,
            minutes=i,
            medians=medians,
            seed=i,
            **kw,
        )
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        labels.append(label)
    return labels


def settled(client: httpx.Client, path: str, **params: str) -> dict:
    """GET `path` once the change-point backlog of what it shows has been worked off."""
    deadline = time.monotonic() + 20
    while True:
        response = client.get(path, params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        if not body["change_points_pending"]:
            return body
        assert time.monotonic() < deadline, f"{path}: change points still pending after 20 s"
        time.sleep(0.05)


def change_points(client: httpx.Client, kernel: str, branch: str = "main") -> list[dict]:
    return settled(client, "/api/v1/series", kernel=kernel, branch=branch)["change_points"]


def metric_change_points(client: httpx.Client, label: str) -> dict[str, dict | None]:
    metrics = settled(client, f"/api/v1/commits/{sha_for(label)}/metrics")
    return {
        k["kernel"]: k["metrics"][0]["change_point"]
        for w in metrics["workloads"]
        for k in w["kernels"]
        if k["metrics"]
    }


def test_a_step_is_stored_at_the_first_slower_commit(client: httpx.Client) -> None:
    levels = [{"step": 100.0, "flat": 50.0}] * 12 + [{"step": 110.0, "flat": 50.0}] * 6
    labels = post_line(client, levels)
    (cp,) = change_points(client, "step")
    assert cp["commit"] == sha_for("c12")
    assert cp["before_median"] == pytest.approx(100.0, rel=0.002)
    assert cp["after_median"] == pytest.approx(110.0, rel=0.002)
    assert cp["change"] == pytest.approx(0.10, abs=0.003)
    assert cp["committed_at"].startswith("2026-11-01T12:12:00")
    assert change_points(client, "flat") == []
    for label in labels:
        got = metric_change_points(client, label)
        assert got["flat"] is None
        if label == "c12":
            assert got["step"] == cp
        else:
            assert got["step"] is None, label


def test_pure_noise_over_thirty_commits_has_none(client: httpx.Client) -> None:
    rng = np.random.default_rng(5)
    levels = []
    for _ in range(30):
        jitter = float(rng.uniform(0.002, 0.01))
        levels.append(
            {
                k: base * (1 + jitter * float(rng.standard_normal()))
                for k, base in {"long": 300.0, "mid": 20.0, "short": 6.0}.items()
            }
        )
    post_line(client, levels, spread=float(rng.uniform(0.002, 0.01)))
    for kernel in ("long", "mid", "short"):
        assert change_points(client, kernel) == [], kernel


def test_two_steps_give_two(client: httpx.Client) -> None:
    levels = [{"k": 100.0}] * 8 + [{"k": 112.0}] * 8 + [{"k": 104.0}] * 8
    post_line(client, levels)
    got = change_points(client, "k")
    assert [c["commit"] for c in got] == [sha_for("c8"), sha_for("c16")]
    assert [round(c["change"], 2) for c in got] == [0.12, -0.07]
    assert got[0]["after_median"] == pytest.approx(got[1]["before_median"])


def test_a_rerun_of_an_older_commit_keeps_later_change_points(client: httpx.Client) -> None:
    labels = post_line(client, [{"k": 100.0}] * 8 + [{"k": 110.0}] * 4)
    assert [c["commit"] for c in change_points(client, "k")] == [sha_for("c8")]
    again = document(
        commit="c6",
        parents=["c5"],
        ancestors=labels[:6][::-1],
        minutes=6,
        medians={"k": 100.0},
        seed=60,
    )
    assert client.post("/api/v1/runs", json=again).status_code == 201
    assert [c["commit"] for c in change_points(client, "k")] == [sha_for("c8")]


def test_a_commit_measured_twice_is_its_newest_runs_median(client: httpx.Client) -> None:
    """c8 was first measured at the old level (a run that missed the change), then again at
    the new one: the newest run is the commit's point, so the shift starts at c8, not c9."""
    labels = post_line(client, [{"k": 100.0}] * 9 + [{"k": 110.0}] * 4)
    assert [c["commit"] for c in change_points(client, "k")] == [sha_for("c9")]
    again = document(commit="c8", parents=["c7"], ancestors=labels[:8][::-1], minutes=8,
                     medians={"k": 110.0}, seed=80)  # fmt: skip
    assert client.post("/api/v1/runs", json=again).status_code == 201
    (cp,) = change_points(client, "k")
    assert cp["commit"] == sha_for("c8")
    assert cp["after_median"] == pytest.approx(110.0, rel=0.003)


def test_other_branches_are_kept_apart(client: httpx.Client) -> None:
    labels = post_line(client, [{"k": 100.0}] * 8)
    for i in range(4):  # an experiment branch, 20% slower, forked from the main line
        side = document(
            commit=f"x{i}",
            parents=[f"x{i - 1}" if i else labels[-1]],
            ancestors=[f"x{j}" for j in range(i - 1, -1, -1)] + labels[::-1],
            minutes=20 + i,
            branch="experiment",
            medians={"k": 120.0},
            seed=30 + i,
        )
        assert client.post("/api/v1/runs", json=side).status_code == 201
    assert change_points(client, "k") == []
    (cp,) = change_points(client, "k", branch="experiment")
    assert cp["commit"] == sha_for("x0")


def test_a_change_point_survives_the_window_sliding_past_it(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the runner's capped ancestry the window slides; the guard keeps older shifts."""
    monkeypatch.setattr(changepoints, "GUARD", 3)
    monkeypatch.setattr(changepoints, "FREEZE_AFTER", 9)
    post_line(client, [{"k": 100.0}] * 5 + [{"k": 110.0}] * 15, keep=8)
    (cp,) = change_points(client, "k")
    assert cp["commit"] == sha_for("c5")
    assert cp["before_median"] == pytest.approx(100.0, rel=0.002)

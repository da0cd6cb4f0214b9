"""A workload's prepare time, peak memory and numeric error beside its duration, through the
service over real HTTP on SQLite and PostgreSQL: a history of steady runs, the commit that moved
all three (its duration unchanged), the innocent commit after it, and the fix."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine, select

from service.models import Notification
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

STEADY = {"prepare": [2.0, 2.3, 2.1], "peak": 1.07e9, "error": 1e-7}
MOVED = {"prepare": [6.1, 6.4, 6.0], "peak": 1.61e9, "error": 1e-4}


@pytest.fixture
def client(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def post(client: httpx.Client, label: str, line: list[str], measured: dict,
         base_prepare: list[float] | None = None) -> None:  # fmt: skip
    """A run of `label` whose processes measured `measured`; with `base_prepare`, its workload
    timed in pairs against its parent, whose processes prepared in those seconds."""
    doc = document(commit=label, parents=line[:1], ancestors=line, minutes=len(line),
                   medians={"tmatmul": 250.0}, seed=len(line))  # fmt: skip
    w = doc["workloads"][0]
    for process, prepared in zip(w["timing"]["processes"], measured["prepare"], strict=True):
        process["prepare_seconds"] = prepared
        process["peak_memory_bytes"] = int(measured["peak"])
        process["process"] = "suite" if base_prepare is None else "paired"
    w["correctness"]["error_norm"] = measured["error"]
    w["correctness"]["tolerance"] = 1e-3
    if base_prepare is not None:
        base = document(commit=line[0], medians={"tmatmul": 250.0}, seed=len(line) + 50)
        for process, prepared in zip(base["workloads"][0]["timing"]["processes"], base_prepare,
                                     strict=True):  # fmt: skip
            process.update(prepare_seconds=prepared, process="paired")
        doc["paired_base"] = base
    answer = client.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text


def measures(client: httpx.Client, label: str) -> dict[str, tuple[str, str]]:
    answer = client.get(f"/api/v1/commits/{sha_for(label)}/metrics").json()
    (w,) = answer["workloads"]
    assert answer["verdict_counts"] == {"unchanged": 1} or label == "c0", answer["verdict_counts"]
    return {m["measure"]: (m["verdict"], m["said"]) for m in w["measures"]}


def notified(engine: Engine) -> list[tuple[str, str]]:
    """(kind, headline) of the notification events written so far, in order."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(Notification.kind, Notification.payload).order_by(Notification.id)
        )
        return [(kind, payload["headline"]) for kind, payload in rows]


def test_prepare_time_peak_memory_and_numeric_error_have_verdicts(
    client: httpx.Client, engine: Engine
) -> None:
    line: list[str] = []
    for i in range(4):
        post(client, f"c{i}", line[::-1], STEADY)
        line.append(f"c{i}")
    assert {m: v for m, (v, _) in measures(client, "c0").items()} == dict.fromkeys(
        ("numeric_error", "peak_memory_bytes", "prepare_seconds"), "new"
    )
    assert {v for v, _ in measures(client, "c3").values()} == {"unchanged"}
    post(client, "moved", line[::-1], MOVED)
    line.append("moved")
    assert measures(client, "moved") == {
        "numeric_error": ("regressed", "numeric error 1.0e-07 → 1.0e-04 (×1,000), regressed"),
        "peak_memory_bytes": ("regressed", "peak memory 1.07 GB → 1.61 GB (+50%), regressed"),
        "prepare_seconds": ("regressed", "prepare time 2.1 s → 6.1 s (+190%), regressed"),
    }
    page = client.get(f"/commits/{sha_for('moved')}").text
    assert "peak memory 1.07 GB → 1.61 GB (+50%), regressed" in page
    # Each opened an alert at once (no interleaved confirmation: a measure needs none).
    opened = {a["series"]["metric"]: a for a in client.get("/api/v1/alerts").json()}
    assert set(opened) == {"numeric_error", "peak_memory_bytes", "prepare_seconds"}
    peak = opened["peak_memory_bytes"]
    assert (peak["state"], peak["commit"], peak["confirm_job_id"]) == (
        "open",
        sha_for("moved"),
        None,
    )
    assert peak["summary"] == "gemm_fwd 1024³ tmatmul: peak memory 1.07 GB → 1.61 GB (+50%)"
    assert peak["change"] == pytest.approx(0.505, abs=0.001)
    # An alert's series of a measure holds no points: no trend offers it.
    assert client.get("/trends.json").json()["choices"]["metrics"] == ["duration"]
    alerts_page = client.get("/alerts")
    assert alerts_page.status_code == 200 and peak["summary"] in alerts_page.text
    # and notified as a duration's alert is, once each
    assert ("alert_opened", peak["summary"]) in notified(engine) and len(notified(engine)) == 3
    post(client, "innocent", line[::-1], MOVED)  # compared with the moved run: unchanged
    line.append("innocent")
    assert {v for v, _ in measures(client, "innocent").values()} == {"unchanged"}
    assert len(client.get("/api/v1/alerts", params={"state": "all"}).json()) == 3  # none new
    post(client, "fix", line[::-1], STEADY)
    assert {v for v, _ in measures(client, "fix").values()} == {"improved"}
    fixed = client.get(f"/api/v1/alerts/{peak['id']}").json()
    assert (fixed["state"], fixed["fixed_by_commit"]) == ("fixed", sha_for("fix"))
    assert "back within 1% of the level it regressed from" in fixed["events"][-1]["note"]
    assert client.get("/api/v1/alerts", params={"state": "open"}).json() == []
    assert [kind for kind, _ in notified(engine)].count("alert_fixed") == 3


def test_a_workload_that_reports_none_of_them_has_none(client: httpx.Client) -> None:
    doc = document(commit="plain", medians={"gemm": 100.0})
    doc["workloads"][0].pop("correctness")
    assert client.post("/api/v1/runs", json=doc).status_code == 201
    answer = client.get(f"/api/v1/commits/{sha_for('plain')}/metrics").json()
    assert answer["workloads"][0]["measures"] == []


def test_a_prepare_time_timed_in_pairs_is_judged_against_its_base_and_carries_the_line(
    client: httpx.Client, engine: Engine
) -> None:
    """An H100 doubt history (2026-12-08) cried wolf here: a launch that changed was timed in
    pairs, where it prepared faster than among the suite's processes, and the innocent commit
    after it, among the suite's again, regressed +36% against the pairs. Now the pairs are
    judged against their base, timed alike, and the next run against the level they carried."""
    line: list[str] = []
    for i in range(4):
        post(client, f"c{i}", line[::-1], STEADY)
        line.append(f"c{i}")
    post(client, "changed", line[::-1], {**STEADY, "prepare": [1.5, 1.6, 1.5]},
         base_prepare=[1.5, 1.5, 1.6])  # fmt: skip
    line.append("changed")
    assert measures(client, "changed")["prepare_seconds"][0] == "unchanged"
    post(client, "innocent", line[::-1], STEADY)
    line.append("innocent")
    verdict, said = measures(client, "innocent")["prepare_seconds"]
    assert verdict == "unchanged", said
    assert client.get("/api/v1/alerts", params={"state": "all"}).json() == []
    # A compile 2 s slower, timed in pairs, regresses there, once.
    post(client, "slower", line[::-1], {**STEADY, "prepare": [3.6, 3.5, 3.6]},
         base_prepare=[1.5, 1.6, 1.5])  # fmt: skip
    line.append("slower")
    verdict, said = measures(client, "slower")["prepare_seconds"]
    assert verdict == "regressed" and "(+140%)" in said, said
    post(client, "after", line[::-1], {**STEADY, "prepare": [4.9, 5.0, 4.8]})
    assert measures(client, "after")["prepare_seconds"][0] == "unchanged"
    (alert,) = client.get("/api/v1/alerts", params={"state": "all"}).json()
    assert (alert["series"]["metric"], alert["commit"]) == ("prepare_seconds", sha_for("slower"))
    assert alert["base_commit"] == sha_for("innocent")

"""Alert groups over real HTTP, on SQLite and PostgreSQL (issue 36 item 7): two workloads slowed
by one kernel's one cause are one group with one headline, triaged together, all or none."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine

from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.evaluation.alerts.test_lifecycle import runner_token, with_profile

SHARED = "gemm_shared"  # the kernel both gemm workloads run
BEFORE = {"gemm_a": 100.0, "gemm_b": 100.0, "lonely": 100.0}
AFTER = {"gemm_a": 106.0, "gemm_b": 108.0, "lonely": 107.0}


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_TOKEN) as client:
        yield client


def profiled(doc: dict, *, slower: bool) -> dict:
    """gemm_a and gemm_b run one kernel; at the head it needs more registers (its occupancy the
    cause), and so does `lonely`, a kernel of its own."""
    for w in doc["workloads"]:
        if w["params"]["act"] in ("gemm_a", "gemm_b"):
            w["kernels"], w["timing"]["kernel"] = [SHARED], SHARED
    with_profile(doc, registers=96 if slower else 64, occupancy=55.0 if slower else 82.0,
                 finding=False)  # fmt: skip
    unique = {k["kernel"]: k for k in doc["build"]["kernels"]}
    doc["build"]["kernels"] = list(unique.values())
    return doc


def regress(admin: httpx.Client) -> str:
    """Eight commits, then a head that slows all three workloads; the head's last parent."""
    labels: list[str] = []
    for i in range(8):
        doc = document(commit=f"c{i}", parents=labels[-1:], ancestors=labels[::-1], minutes=i,
                       medians=BEFORE, seed=i)  # fmt: skip
        assert admin.post("/api/v1/runs", json=profiled(doc, slower=False)).status_code == 201
        labels.append(f"c{i}")
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=20,
                    medians=AFTER, seed=50)  # fmt: skip
    assert admin.post("/api/v1/runs", json=profiled(head, slower=True)).status_code == 201
    return labels[-1]


def confirm_all_but_gemm_b(server: LiveServer, engine: Engine) -> None:
    """The confirmation measures gemm_a and lonely only: gemm_b is dismissed, they open."""
    measured = [k for k in AFTER if k != "gemm_b"]
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        job = claim["job"]
        head = document(commit="head", medians={k: AFTER[k] for k in measured}, seed=70)
        base = document(commit=job["payload"]["base_sha"],
                        medians={k: BEFORE[k] for k in measured}, seed=71)  # fmt: skip
        head.update(job_id=job["id"], lease_token=claim["attempt_token"], paired_base=base)
        assert runner.post("/api/v1/runs", json=head).status_code == 201


def test_alerts_of_one_kernel_and_cause_are_one_group_triaged_together(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    regress(admin)
    alerts = {a["series"]["params"]["act"]: a for a in admin.get("/api/v1/alerts").json()}
    a, b, lonely = (alerts[k]["id"] for k in ("gemm_a", "gemm_b", "lonely"))
    alone, shared = admin.get("/api/v1/alerts/groups").json()  # the newest alert's group first
    assert shared["alert_ids"] == [b, a]  # the larger change first
    assert [x["id"] for x in shared["alerts"]] == [b, a]
    assert shared["key"] == {"repository": "acme/kernels", "branch": "main",
                             "commit": sha_for("head"), "kernel": SHARED,
                             "cause": "occupancy_registers"}  # fmt: skip
    assert shared["headline"].startswith(
        "gemm_shared: lower occupancy (registers) — slowed gemm_fwd 1024³ gemm_b +8"
    )
    assert ", gemm_fwd 1024³ gemm_a +" in shared["headline"]
    assert alone["alert_ids"] == [lonely] and alone["key"]["kernel"] == "lonely"
    assert shared["states"] == ["suspected"]

    triage = {"alert_ids": [a, b], "state": "acknowledged", "note": "one change", "actor": "ada"}
    assert httpx.post(f"{server.url}/api/v1/alerts/groups/triage", json=triage).status_code == 401
    # Suspected: neither is triaged yet (the rule of a single alert's PATCH).
    early = admin.post("/api/v1/alerts/groups/triage", json=triage)
    assert early.status_code == 409
    assert sorted(r["id"] for r in early.json()["refused"]) == [a, b]
    missing = admin.post("/api/v1/alerts/groups/triage", json={**triage, "alert_ids": [a, 99]})
    assert missing.status_code == 404 and missing.json()["missing"] == [99]

    confirm_all_but_gemm_b(server, engine)
    states = {x["id"]: x["state"] for x in admin.get("/api/v1/alerts").json()}
    assert states == {a: "open", b: "dismissed", lonely: "open"}
    opened = admin.get(f"/api/v1/alerts/{a}").json()
    # One of the two cannot be acknowledged (dismissed): neither is, and the answer says which.
    refused = admin.post("/api/v1/alerts/groups/triage", json=triage)
    assert refused.status_code == 409
    assert refused.json()["refused"] == [
        {"id": b, "state": "dismissed", "why": refused.json()["refused"][0]["why"]}
    ]
    assert f"alert {b} is dismissed" in refused.json()["detail"]
    assert admin.get(f"/api/v1/alerts/{a}").json() == opened  # not a new event either
    # Invalid both may become: both do, in one go.
    done = admin.post("/api/v1/alerts/groups/triage", json={**triage, "state": "invalid"})
    assert done.status_code == 200, done.text
    assert [(x["id"], x["state"], x["updated_by"]) for x in done.json()] == [
        (a, "invalid", "ada"), (b, "invalid", "ada")
    ]  # fmt: skip
    for x in done.json():
        assert x["events"][-1]["to_state"] == "invalid" and x["events"][-1]["note"] == "one change"
    (group,) = admin.get("/api/v1/alerts/groups", params={"state": "open"}).json()
    assert group["alert_ids"] == [lonely]
    listed = admin.get("/api/v1/alerts/groups", params={"repository": "acme/kernels"}).json()
    assert [g["states"] for g in listed] == [["open"], ["invalid"]]


def test_the_single_alert_triage_keeps_its_rule(server: LiveServer, admin: httpx.Client) -> None:
    regress(admin)
    alert = admin.get("/api/v1/alerts").json()[0]
    early = admin.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "acknowledged"})
    assert early.status_code == 409
    assert early.json()["detail"] == (
        f"alert {alert['id']} is suspected: only confirmed alerts are triaged (it can still be "
        "marked invalid)"
    )
    assert (
        admin.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "invalid"}).json()["state"]
        == "invalid"
    )

"""Work counters: an exact change in a kernel's ncu work is a notice beside the timing verdict."""

from __future__ import annotations

import httpx
import pytest

from runner.profile.ncu import METRICS
from service.analysis.work import WORK_COUNTERS, describe, judge, verdicts
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

INSTRUCTIONS, SECTORS, REQUESTS, L2_READ, DRAM_READ = WORK_COUNTERS


def test_a_change_beyond_the_counters_tolerance_is_a_change() -> None:
    assert judge(INSTRUCTIONS, 1_000_000, 1_031_000) == ("changed", pytest.approx(0.031))
    assert judge(INSTRUCTIONS, 1_000_000, 1_000_500)[0] == "same"  # 0.05%: within 0.1%
    assert judge(DRAM_READ, 1e8, 1.004e8)[0] == "same"  # DRAM bytes vary by 0.1%: 0.5% allowed
    assert judge(DRAM_READ, 1e8, 1.01e8)[0] == "changed"
    assert judge(DRAM_READ, 2_190_336, 2_171_904)[0] == "same"  # 18 KB: seen between two runs
    assert judge(SECTORS, None, 5.0) == ("new", None)
    assert judge(SECTORS, 0.0, 0.0) == ("same", 0.0)
    assert judge(SECTORS, 0.0, 8.0) == ("changed", None)
    assert describe("instructions", 0.031) == "instructions +3.1%"
    assert describe("global load sectors", None) == "global load sectors from 0"


def test_only_the_qualifying_counters_are_judged() -> None:
    head = {INSTRUCTIONS: 103.0, "dram__bytes_write.sum": 512.0, "gpu__time_duration.sum": 5e3}
    ((counter, base, value, verdict, change),) = verdicts({INSTRUCTIONS: 100.0}, head)
    assert (counter, base, value, verdict) == (INSTRUCTIONS, 100.0, 103.0, "changed")
    assert change == pytest.approx(0.03)
    assert [v[3] for v in verdicts(None, head)] == ["new"]


def with_counters(doc: dict, instructions: float, sectors: float, labels: bool = True) -> dict:
    """The counters as the runner sends them: with its labels (runner/profile/ncu.py METRICS),
    or without (`labels=False`: a runner from before labels travelled)."""

    def metric(name: str, value: float, unit: str) -> dict:
        return {"value": value, "unit": unit, **({"label": METRICS[name]} if labels else {})}

    for w in doc["workloads"]:
        w["ncu"] = {
            "status": "ok",
            "kernels": [
                {
                    "kernel": w["kernels"][0],
                    "metrics": {
                        INSTRUCTIONS: metric(INSTRUCTIONS, instructions, "inst"),
                        SECTORS: metric(SECTORS, sectors, "sector"),
                        "dram__bytes_write.sum": metric("dram__bytes_write.sum", 256.0, "byte"),
                    },
                    "findings": [],
                }
            ],
        }
    return doc


def post(admin: httpx.Client, doc: dict) -> dict:
    assert admin.post("/api/v1/runs", json=doc).status_code == 201
    return admin.get(f"/api/v1/commits/{doc['commit']['sha']}/metrics").json()


def test_three_percent_more_work_on_an_unchanged_timing_is_a_notice(server: LiveServer) -> None:
    """A short kernel that does 3% more work: its timing is within noise (unchanged), its
    counters say exactly what changed; the commit stays green."""
    history = ["c0", "c1", "c2"]
    with server.client(ADMIN_TOKEN) as admin:
        for i, label in enumerate(history):
            doc = document(commit=label, parents=history[i - 1 : i] if i else [],
                           ancestors=history[:i][::-1], minutes=i, seed=i,
                           medians={"gemm_bias_act_fwd": 5.0})  # fmt: skip
            first = post(admin, with_counters(doc, 1_000_000, 65_536))
        (kernel,) = first["workloads"][0]["kernels"]
        assert [w["verdict"] for w in kernel["work"]] == ["same", "same"]
        head = document(commit="head", parents=["c2"], ancestors=history[::-1], minutes=9,
                        seed=9, medians={"gemm_bias_act_fwd": 5.0})  # fmt: skip
        metrics = post(admin, with_counters(head, 1_031_000, 67_502))
        (kernel,) = metrics["workloads"][0]["kernels"]
        assert kernel["metrics"][0]["verdict"] == "unchanged"
        work = {w["counter"]: w for w in kernel["work"]}
        assert set(work) == {INSTRUCTIONS, SECTORS}  # DRAM writes do not qualify
        assert work[INSTRUCTIONS]["verdict"] == "changed"
        # Shown by the runner's label, the one table of ncu metrics (runner/profile/ncu.py).
        assert work[INSTRUCTIONS]["label"] == METRICS[INSTRUCTIONS] == "instructions executed"
        assert work[INSTRUCTIONS]["note"] == "instructions executed +3.1%"
        assert work[INSTRUCTIONS]["base_value"] == 1_000_000
        assert work[SECTORS]["change"] == pytest.approx(0.03, abs=1e-4)
        assert metrics["verdict_counts"] == {"unchanged": 1}  # no red commit
        assert admin.get("/api/v1/alerts").json() == []
        page = admin.get(f"/commits/{sha_for('head')}").text
        assert "work: instructions executed +3.1%" in page
        # The kernel's ncu table names each metric by the runner's label beside ncu's name.
        assert "instructions executed <code>smsp__inst_executed.sum</code>" in page
        ncu_metrics = kernel["ncu_metrics"]  # the API keeps the label with the value
        assert ncu_metrics[INSTRUCTIONS] == {"value": 1_031_000, "unit": "inst",
                                            "label": "instructions executed"}  # fmt: skip
        assert page.count('class="work-changed"') == 2


def test_a_capture_without_labels_shows_ncus_names(server: LiveServer) -> None:
    """A document from a runner that sent no labels: its work verdicts name the counters as ncu
    does, and the kernel's work history lists them so."""
    history = ["c0", "c1"]
    with server.client(ADMIN_TOKEN) as admin:
        for i, label in enumerate(history):
            doc = document(commit=label, parents=history[i - 1 : i] if i else [],
                           ancestors=history[:i][::-1], minutes=i, seed=i,
                           medians={"gemm_bias_act_fwd": 5.0})  # fmt: skip
            metrics = post(admin, with_counters(doc, 1_000_000 + 50_000 * i, 65_536, labels=False))
        work = {w["counter"]: w for w in metrics["workloads"][0]["kernels"][0]["work"]}
        assert work[INSTRUCTIONS]["label"] == INSTRUCTIONS
        assert work[INSTRUCTIONS]["note"] == f"{INSTRUCTIONS} +5.0%"
        series_id = metrics["workloads"][0]["kernels"][0]["metrics"][0]["series_id"]
        history_answer = admin.get(f"/api/v1/series/work?id={series_id}").json()
        assert history_answer["counters"][INSTRUCTIONS] == INSTRUCTIONS

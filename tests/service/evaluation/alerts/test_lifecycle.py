"""Alerts end to end over real HTTP: suspected → confirmed interleaved → triaged → fixed."""

from __future__ import annotations

import copy

import httpx
import pytest
from sqlalchemy import Engine, update

from service.core.tokens import new_token, token_hash
from service.models import Runner
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

BASE_NCU = {  # a latency-bound kernel: no unit above 20% busy
    "gpu__time_duration.sum": {"value": 100_000.0, "unit": "ns"},
    "sm__warps_active.avg.pct_of_peak_sustained_active": {"value": 82.0, "unit": "%"},
    "dram__bytes_read.sum": {"value": 4.0e6, "unit": "byte"},
    "dram__bytes_write.sum": {"value": 4.0e6, "unit": "byte"},
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 20.0, "unit": "%"},
    "lts__t_sectors.sum": {"value": 3.0e5, "unit": "sector"},
    "l1tex__t_sectors.sum": {"value": 2.5e5, "unit": "sector"},
    "launch__registers_per_thread": {"value": 64.0, "unit": "register/thread"},
    "launch__occupancy_limit_registers": {"value": 4.0, "unit": "block"},
    "launch__occupancy_limit_shared_mem": {"value": 13.0, "unit": "block"},
}


def with_profile(doc: dict, *, registers: int, occupancy: float, finding: bool) -> dict:
    metrics = copy.deepcopy(BASE_NCU)
    metrics["sm__warps_active.avg.pct_of_peak_sustained_active"]["value"] = occupancy
    metrics["launch__registers_per_thread"]["value"] = float(registers)
    metrics["launch__occupancy_limit_registers"]["value"] = 4.0 if registers <= 64 else 2.0
    findings = (
        [
            {
                "rule": "AchievedOccupancy",
                "type": "OPT",
                "description": "low occupancy",
                "estimated_speedup": 17.0,
            }
        ]
        if finding
        else []
    )
    for w in doc["workloads"]:
        kernel = w["kernels"][0]
        w["ncu"] = {
            "status": "ok",
            "kernels": [{"kernel": kernel, "metrics": metrics, "findings": findings}],
        }
    doc["build"]["kernels"] = [
        {
            "kernel": w["kernels"][0],
            "arch": "sm_90",
            "registers": registers,
            "shared_bytes": 16896,
            "spill_stores_bytes": 0,
            "spill_loads_bytes": 0,
        }
        for w in doc["workloads"]
    ]
    return doc


@pytest.fixture
def admin(server: LiveServer) -> httpx.Client:
    with server.client(ADMIN_TOKEN) as c:
        yield c


def regressed_history(
    admin: httpx.Client,
    slower: float = 1.06,
    frameworks: tuple[dict, dict] | None = None,
    choices: tuple[dict, dict] | None = None,
    base_twice: bool = False,
) -> list[str]:
    """c0-c7 at 100 us, then `head` `slower` with a profile that explains it; `base_twice`: c7
    measured first as the head will be (run "c7-first"), then as usual ("c7-again")."""
    labels: list[str] = []
    for i in range(8):
        label = f"c{i}"
        doc = document(
            commit=label,
            parents=labels[-1:],
            ancestors=labels[::-1],
            minutes=i,
            medians={"gemm_bias_act_fwd": 100.0, "steady": 50.0},
            seed=i,
        )
        with_profile(doc, registers=64, occupancy=82.0, finding=False)
        if frameworks:
            doc["environment"]["frameworks"] = frameworks[0]
        if choices:
            doc["workloads"][0]["choices"] = choices[0]
        if base_twice and i == 7:
            older = copy.deepcopy(doc)
            older["run_id"] = "c7-first"
            with_profile(older, registers=96, occupancy=55.0, finding=True)
            assert admin.post("/api/v1/runs", json=older).status_code == 201
            doc["run_id"] = "c7-again"
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
        labels.append(label)
    head = document(
        commit="head",
        parents=labels[-1:],
        ancestors=labels[::-1],
        minutes=20,
        medians={"gemm_bias_act_fwd": 100.0 * slower, "steady": 50.0},
        seed=50,
    )
    with_profile(head, registers=96, occupancy=55.0, finding=True)
    if frameworks:
        head["environment"]["frameworks"] = frameworks[1]
    if choices:
        head["workloads"][0]["choices"] = choices[1]
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    return labels


def runner_token(engine: Engine, name: str = "h100-a") -> str:
    token = new_token("kwr")
    with engine.begin() as conn:
        conn.execute(update(Runner).where(Runner.name == name).values(token_hash=token_hash(token)))
    return token


def confirmation(claim: dict, base_median: float, head_median: float) -> dict:
    job = claim["job"]
    head = document(commit="head", medians={"gemm_bias_act_fwd": head_median}, seed=70)
    base = document(
        commit=job["payload"]["base_sha"], medians={"gemm_bias_act_fwd": base_median}, seed=71
    )
    head["job_id"], head["lease_token"] = job["id"], claim["attempt_token"]
    head["paired_base"] = base
    return head


def test_regression_is_suspected_confirmed_triaged_and_fixed(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    labels = regressed_history(admin)
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["state"] == "suspected"
    assert alert["commit"] == sha_for("head")
    assert alert["base_commit"] == sha_for(labels[-1])
    assert alert["summary"].startswith("gemm_fwd 1024³ gemm_bias_act_fwd +")
    assert alert["change"] == pytest.approx(0.06, abs=0.01)
    assert (
        ": kernel gemm_bias_act_fwd +6%: achieved occupancy 82% → 55%, limited by registers "
        "(≈ 100% of the slowdown); registers 64→96; new finding AchievedOccupancy (est. 17%)"
    ) in alert["summary"]
    (kernel,) = alert["attribution"]["kernels"]
    assert kernel["share"] == 1.0 and kernel["change"] == alert["change"]
    (cause,) = alert["attribution"]["causes"]  # DRAM bytes did not move: no other cause
    assert cause["kind"] == "occupancy_registers" and cause["kernel"] == "gemm_bias_act_fwd"
    moved = [m["metric"] for m in kernel["metrics"][:3]]
    assert moved == [  # by |change|
        "launch__occupancy_limit_registers",
        "launch__registers_per_thread",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    ]
    assert kernel["resources"] == [{"resource": "registers", "base": 64, "head": 96}]
    # Suspected alerts are not triaged before confirmation.
    early = admin.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "acknowledged"})
    assert early.status_code == 409
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        assert claim["job"]["kind"] == "confirm"
        assert claim["job"]["payload"]["base_sha"] == sha_for(labels[-1])
        assert claim["job"]["required_labels"] == {"runner": "h100-a"}
        answer = runner.post("/api/v1/runs", json=confirmation(claim, 100.0, 106.0))
        assert answer.status_code == 201, answer.text
        assert "open" in answer.json()["detail"]
    opened = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert opened["state"] == "open"
    assert opened["confirmed_change"] == pytest.approx(0.06, abs=0.01)
    assert [e["to_state"] for e in opened["events"]] == ["suspected", "open"]
    acked = admin.patch(
        f"/api/v1/alerts/{alert['id']}",
        json={"state": "acknowledged", "note": "looking", "actor": "ada"},
    )
    assert acked.json()["state"] == "acknowledged"
    assert acked.json()["updated_by"] == "ada"
    assert (
        httpx.patch(f"{server.url}/api/v1/alerts/{alert['id']}", json={"state": "open"}).status_code
        == 401
    )
    # The confirmation is not a run: the head's history keeps one result.
    series = admin.get("/api/v1/series", params={"id": opened["series"]["id"]}).json()
    assert len(series["points"]) == 9
    fix = document(
        commit="fix",
        parents=["head"],
        ancestors=["head", *labels[::-1]],
        minutes=30,
        medians={"gemm_bias_act_fwd": 100.2, "steady": 50.0},
        seed=90,
    )
    assert admin.post("/api/v1/runs", json=fix).status_code == 201
    fixed = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert fixed["state"] == "fixed"
    assert fixed["fixed_by_commit"] == sha_for("fix")
    assert admin.get("/api/v1/alerts", params={"state": "open"}).json() == []


def test_an_upgrade_of_the_suites_framework_is_named_beside_the_kernels_causes(
    admin: httpx.Client,
) -> None:
    """The base runs had PyTorch 2.10 and Triton 3.5, the head PyTorch 2.11 and no Triton: the
    series goes on (the fingerprint names the GPU, driver and CUDA only), and the alert says
    what the runs ran with that differs."""
    regressed_history(
        admin, frameworks=({"torch": "2.10.0", "triton": "3.5.0"}, {"torch": "2.11.0"})
    )
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["attribution"]["software"] == [
        {"name": "PyTorch", "base": "2.10.0", "head": "2.11.0"},
        {"name": "Triton", "base": "3.5.0", "head": None},
    ]
    assert alert["summary"].endswith("; PyTorch 2.10.0→2.11.0, Triton 3.5.0→absent")


def test_an_autotuners_other_choice_is_named_beside_the_kernels_causes(
    admin: httpx.Client,
) -> None:
    """The workload's `prepare` chose another config at the head (as a Triton autotuner does)."""
    was, now = "BLOCK_M: 128, num_warps: 8", "BLOCK_M: 64, num_warps: 4"
    regressed_history(admin, choices=({"gemm_bias_act_fwd": was}, {"gemm_bias_act_fwd": now}))
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["attribution"]["choices"] == [
        {"name": "gemm_bias_act_fwd", "base": was, "head": now}
    ]
    assert alert["summary"].endswith(f"; gemm_bias_act_fwd chose {now} (was {was})")
    assert alert["attribution"]["software"] == []


def test_a_regression_that_does_not_reproduce_is_dismissed(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    regressed_history(admin)
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        no_base = confirmation(claim, 100.0, 100.0)
        no_base.pop("paired_base")
        assert runner.post("/api/v1/runs", json=no_base).status_code == 422
        answer = runner.post("/api/v1/runs", json=confirmation(claim, 100.0, 100.1))
        assert answer.status_code == 201
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["state"] == "dismissed"
    assert admin.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "open"}).status_code == 409
    assert admin.get("/api/v1/alerts/99999").status_code == 404
    assert admin.get("/api/v1/alerts", params={"state": "bogus"}).status_code == 422


def test_compare_two_commits(admin: httpx.Client) -> None:
    labels = regressed_history(admin, slower=1.10)
    comparison = admin.get(
        "/api/v1/compare", params={"base": sha_for(labels[-1])[:8], "head": sha_for("head")}
    )
    assert comparison.status_code == 200
    rows = comparison.json()["rows"]
    assert rows[0]["series"]["kernel"] == "gemm_bias_act_fwd"
    assert rows[0]["significant"] is True
    assert rows[0]["change"] == pytest.approx(0.10, abs=0.01)
    assert rows[1]["series"]["kernel"] == "steady"
    assert rows[1]["significant"] is False
    # The regression's alert, found at the head, is named with its cause; none for `steady`.
    (alert,) = admin.get("/api/v1/alerts").json()
    assert rows[0]["alert"] == {"id": alert["id"], "state": alert["state"],
                                "summary": alert["summary"]}  # fmt: skip
    assert rows[1]["alert"] is None and rows[0]["floor"] == 0.01
    page = admin.get("/compare", params={"base": sha_for(labels[-1]), "head": sha_for("head")})
    assert f"alert #{alert['id']} (suspected)" in page.text
    missing = admin.get("/api/v1/compare", params={"base": "0" * 40, "head": sha_for("head")})
    assert missing.status_code == 404


def post_run(
    admin: httpx.Client, label: str, line: list[str], gemm: float, *, branch: str = "main", **kw
) -> dict:
    """`label`'s run on `branch`, its first-parent line `line` (nearest first)."""
    doc = document(
        commit=label,
        parents=line[:1],
        ancestors=line,
        branch=branch,
        medians={"gemm_bias_act_fwd": gemm, "steady": 50.0},
        **kw,
    )
    answer = admin.post("/api/v1/runs", json=doc)
    assert answer.status_code == 201, answer.text
    return doc


def confirmed(server: LiveServer, engine: Engine, admin: httpx.Client) -> dict:
    """The one suspected alert, confirmed interleaved: open."""
    with server.client(runner_token(engine)) as runner:
        claim = runner.post("/api/v1/jobs/claim").json()
        answer = runner.post("/api/v1/runs", json=confirmation(claim, 100.0, 106.0))
        assert answer.status_code == 201, answer.text
    (alert,) = admin.get("/api/v1/alerts").json()
    assert (alert["state"], alert["branch"]) == ("open", "main")
    return alert


def test_an_open_alert_on_main_does_not_swallow_a_regression_on_release(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """A branch's alerts are its own: release, cut before main regressed, regresses by itself."""
    labels = regressed_history(admin)
    on_main = confirmed(server, engine, admin)
    line = labels[::-1]  # release is cut at c7, before main's regression
    post_run(admin, "r1", line, 100.0, branch="release", minutes=21, seed=61)
    post_run(admin, "r2", ["r1", *line], 106.0, branch="release", minutes=22, seed=62)
    (on_release,) = [a for a in admin.get("/api/v1/alerts").json() if a["branch"] == "release"]
    assert (on_release["state"], on_release["commit"]) == ("suspected", sha_for("r2"))
    assert on_release["series"]["id"] == on_main["series"]["id"]
    # release's recovery closes release's alert, not main's.
    post_run(admin, "r3", ["r2", "r1", *line], 100.0, branch="release", minutes=23, seed=63)
    states = {a["branch"]: a["state"] for a in admin.get("/api/v1/alerts").json()}
    assert states == {"main": "open", "release": "fixed"}


def test_a_fix_on_a_release_branch_cut_after_the_regression_does_not_close_mains_alert(
    server: LiveServer, engine: Engine, admin: httpx.Client
) -> None:
    """Main is still slow: a fix picked onto release only, though its line holds the
    regression, closes nothing on main."""
    labels = regressed_history(admin)
    on_main = confirmed(server, engine, admin)
    post_run(admin, "r1", ["head", *labels[::-1]], 100.0, branch="release", minutes=21, seed=61)
    after = admin.get(f"/api/v1/alerts/{on_main['id']}").json()
    assert (after["state"], after["fixed_by_commit"]) == ("open", None)


def test_the_attribution_reads_the_newest_run_of_a_base_commit_measured_twice(
    admin: httpx.Client,
) -> None:
    """The newer run is the base the verdict compared with: the alert explains against it (the
    older, measured as the head is, would leave nothing to explain)."""
    regressed_history(admin, base_twice=True)
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["attribution"]["base_run"] == "c7-again"
    (cause,) = alert["attribution"]["causes"]
    assert cause["kind"] == "occupancy_registers"
    assert "registers 64→96; new finding AchievedOccupancy" in alert["summary"]


def test_a_series_is_fixed_only_once_back_within_the_class_floor_of_its_earlier_level(
    admin: httpx.Client,
) -> None:
    """A 100 us kernel's floor is 1%: 1.6% above the level it regressed from is still
    regressed, 0.4% above it is back."""
    labels = regressed_history(admin)
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["attribution"]["base_median"] == pytest.approx(100.0, abs=0.1)
    line = ["head", *labels[::-1]]
    post_run(admin, "nearly", line, 101.6, minutes=21, seed=61)
    nearly = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert (nearly["state"], nearly["fixed_by_commit"]) == ("suspected", None)
    post_run(admin, "back", ["nearly", *line], 100.4, minutes=22, seed=62)
    back = admin.get(f"/api/v1/alerts/{alert['id']}").json()
    assert (back["state"], back["fixed_by_commit"]) == ("fixed", sha_for("back"))
    assert "back within 1% of the 100 us it regressed from" in back["events"][-1]["note"]


def compiled_block(doc: dict, kernels: dict[str, float]) -> dict:
    """The document's first workload as a `torch.compile`d block that ran `kernels` (generated
    name -> us per launch), each in the timeline and captured by ncu with 268 MB of traffic."""
    w = doc["workloads"][0]
    w["kernels"] = ["triton_*"]
    w["timeline"] = {"source": "cupti", "reason": "", "kernels": [
        {"kernel": k, "calls": 1, "total_ns": us * 1e3, "share": us / sum(kernels.values())}
        for k, us in kernels.items()]}  # fmt: skip
    metrics = {**copy.deepcopy(BASE_NCU), "dram__bytes_read.sum": {"value": 134e6, "unit": "byte"},
               "dram__bytes_write.sum": {"value": 134e6, "unit": "byte"}}  # fmt: skip
    w["ncu"] = {"status": "ok", "kernels": [{"kernel": k, "metrics": metrics} for k in kernels]}
    return doc


def test_a_graph_break_is_named_first_in_the_alert(admin: httpx.Client) -> None:
    """The block's one fused kernel became two (a graph break): the alert names the set that
    changed, with the time and traffic the new kernels brought, where no kernel pairs by name."""
    fused, split = "triton_poi_fused_gelu_mul_tanh_0", ("triton_poi_fused_gelu_0",
                                                         "triton_poi_fused_mul_tanh_1")  # fmt: skip
    labels: list[str] = []
    for i in range(4):
        doc = document(commit=f"c{i}", parents=labels[-1:], ancestors=labels[::-1], minutes=i,
                       medians={"block": 186.0}, seed=i)  # fmt: skip
        assert (
            admin.post("/api/v1/runs", json=compiled_block(doc, {fused: 180.0})).status_code == 201
        )
        labels.append(f"c{i}")
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=9,
                    medians={"block": 278.0}, seed=9)  # fmt: skip
    head = compiled_block(head, {split[0]: 136.0, split[1]: 136.0})
    assert admin.post("/api/v1/runs", json=head).status_code == 201
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["summary"].startswith(
        f"gemm_fwd 1024³ block +49.4%: kernels 1 → 2 (generated by the compiler: a fusion split "
        f"or joined): {split[0]} and {split[1]} in place of {fused}; their time 180 → 272 us, "
        "their DRAM traffic 268 → 536 MB"
    ), alert["summary"]
    assert alert["attribution"]["kernel_set"]["appeared"] == list(split)
    page = admin.get("/alerts").text
    assert f"The launch ran other kernels: {fused} → {split[0]}, {split[1]}" in page


def triton_matmul(doc: dict, num_stages: int, shared_kib: int) -> dict:
    """The workload's launch ran one Triton kernel, as CUPTI and Triton saw it compiled."""
    doc["workloads"][0]["compiled"] = [
        {"kernel": "matmul_kernel", "compiler": "triton", "threads": 256, "registers": 168,
         "shared_bytes": shared_kib * 1024, "local_bytes": 0, "num_warps": 8,
         "num_stages": num_stages, "target": "cuda:90"},
        {"kernel": "cublas_gemv", "threads": 128, "registers": 40, "shared_bytes": 0},
    ]  # fmt: skip
    return doc


def test_the_compilers_knob_the_author_turned_is_named_first(admin: httpx.Client) -> None:
    """num_stages 3 -> 1 in a Triton matmul: the alert says so, and the shared memory it freed,
    before the counters it moved; the commit's metrics carry what each run compiled."""
    labels: list[str] = []
    for i in range(4):
        doc = document(commit=f"c{i}", parents=labels[-1:], ancestors=labels[::-1], minutes=i,
                       medians={"tmatmul": 250.0}, seed=i)  # fmt: skip
        assert admin.post("/api/v1/runs", json=triton_matmul(doc, 3, 96)).status_code == 201
        labels.append(f"c{i}")
    head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=9,
                    medians={"tmatmul": 407.0}, seed=9)  # fmt: skip
    assert admin.post("/api/v1/runs", json=triton_matmul(head, 1, 32)).status_code == 201
    (alert,) = admin.get("/api/v1/alerts").json()
    assert alert["summary"].startswith(
        "gemm_fwd 1024³ tmatmul +62.8%: matmul_kernel: num_stages 3 → 1, shared memory 96 → 32 KiB"
    ), alert["summary"]
    (turned,) = alert["attribution"]["compiled"]
    assert turned["facts"] == [{"fact": "num_stages", "base": 3, "head": 1},
                               {"fact": "shared_bytes", "base": 98304, "head": 32768}]  # fmt: skip
    page = admin.get("/alerts").text
    assert "What the compiler made of its kernels changed: matmul_kernel: num_stages 3" in page
    metrics = admin.get(f"/api/v1/commits/{sha_for('head')}/metrics").json()
    (workload,) = [w for w in metrics["workloads"] if w["compiled"]]
    assert [(c["kernel"], c.get("num_stages")) for c in workload["compiled"]] == [
        ("matmul_kernel", 1), ("cublas_gemv", None)]  # fmt: skip
    twice = triton_matmul(document(commit="again", medians={"tmatmul": 250.0}), 3, 96)
    twice["workloads"][0]["compiled"].append({"kernel": "matmul_kernel", "num_warps": 4})
    answer = admin.post("/api/v1/runs", json=twice)
    assert answer.status_code == 422
    assert "kernel 'matmul_kernel' is named twice in compiled" in answer.text


def test_a_change_within_its_class_floor_is_not_significant_in_a_comparison(
    admin: httpx.Client,
) -> None:
    """Samples tight enough that -0.3% is beyond chance: below the 1% floor of a 100 us
    kernel's class, no verdict calls it a change, and neither does the comparison."""
    base = document(commit="b", medians={"tight": 100.0}, seed=1, spread=0.0002)
    head = document(commit="h", parents=["b"], ancestors=["b"], minutes=1,
                    medians={"tight": 99.7}, seed=2, spread=0.0002)  # fmt: skip
    for doc in (base, head):
        assert admin.post("/api/v1/runs", json=doc).status_code == 201
    (row,) = admin.get(
        "/api/v1/compare", params={"base": sha_for("b"), "head": sha_for("h")}
    ).json()["rows"]
    assert row["q_value"] < 0.01 and row["change"] == pytest.approx(-0.003, abs=0.0005)
    assert row["significant"] is False
    page = admin.get("/compare", params={"base": sha_for("b"), "head": sha_for("h")}).text
    assert "within floor" in page

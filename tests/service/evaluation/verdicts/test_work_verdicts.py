"""Work counters: an exact change in a kernel's ncu work is a notice beside the timing verdict."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from runner.profile.ncu import METRICS
from service.analysis.work import (
    MIN_PAIRS,
    WORK_COUNTERS,
    WORK_LABELS,
    Capture,
    Noise,
    describe,
    judge,
    learn,
    verdicts,
)
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer

INSTRUCTIONS, SECTORS, REQUESTS, L2_READ, DRAM_READ = WORK_COUNTERS


STEADY = {c: Noise(c, MIN_PAIRS, 0.0) for c in WORK_COUNTERS}


def test_a_change_beyond_the_counters_tolerance_is_a_change() -> None:
    def judged(counter: str, base: float | None, head: float) -> tuple[str, float | None]:
        v = judge(counter, base, head, STEADY[counter])
        return v.verdict, v.change

    assert judged(INSTRUCTIONS, 1_000_000, 1_031_000) == ("changed", pytest.approx(0.031))
    assert judged(INSTRUCTIONS, 1_000_000, 1_000_500)[0] == "same"  # 0.05%: within 0.1%
    assert judged(DRAM_READ, 1e8, 1.004e8)[0] == "same"  # DRAM bytes vary by 0.1%: 0.5% allowed
    assert judged(DRAM_READ, 1e8, 1.01e8)[0] == "changed"
    assert judged(DRAM_READ, 2_190_336, 2_171_904)[0] == "same"  # 18 KB: seen between two runs
    assert judged(SECTORS, None, 5.0) == ("new", None)
    assert judged(SECTORS, 0.0, 0.0) == ("same", 0.0)
    assert judged(SECTORS, 0.0, 8.0) == ("changed", None)
    assert describe("instructions", 0.031) == "instructions +3.1%"
    assert describe("global load sectors", None) == "global load sectors from 0"


def test_only_the_qualifying_counters_are_judged() -> None:
    head = {INSTRUCTIONS: 103.0, "dram__bytes_write.sum": 512.0, "gpu__time_duration.sum": 5e3}
    (v,) = verdicts({INSTRUCTIONS: 100.0}, head)
    assert (v.counter, v.base, v.value, v.verdict) == (INSTRUCTIONS, 100.0, 103.0, "changed")
    assert v.change == pytest.approx(0.03)
    assert [v.verdict for v in verdicts(None, head)] == ["new"]


def captures(values: list[dict[str, float]], key: str | None = "k", reused: bool = False):
    """One kernel's captures along a line, each measured at its own commit (or one measurement
    reused at every commit)."""
    return [Capture(key, "a" * 40 if reused else f"{i:040x}", v) for i, v in enumerate(values)]


def test_the_counters_of_what_the_caches_did_are_learning_until_shown_steady() -> None:
    """Exact counters are steady from the start; L2 and DRAM counters only after MIN_PAIRS pairs
    of captures of unchanged determinants, each a measurement of its own."""
    values = [{INSTRUCTIONS: 1e6, L2_READ: 1e6, DRAM_READ: 5e8}] * (MIN_PAIRS + 1)
    learned = learn(captures(values[:MIN_PAIRS]))  # MIN_PAIRS captures: one pair short
    assert judge(L2_READ, 1e6, 1.2e6, learned[L2_READ]).verdict == "learning"
    assert judge(INSTRUCTIONS, 1e6, 1.005e6, learned[INSTRUCTIONS]).verdict == "changed"
    steady = learn(captures(values))
    assert steady[L2_READ].pairs == MIN_PAIRS and steady[L2_READ].steady
    assert judge(L2_READ, 1e6, 1.2e6, steady[L2_READ]).verdict == "changed"
    # None of these teach anything: one section reused at every commit, captures without
    # determinants (older runners), or captures whose determinants all differ.
    assert learn(captures(values, reused=True))[L2_READ].pairs == 0
    assert learn(captures(values, key=None))[L2_READ].pairs == 0
    varied = [Capture(f"k{i}", f"{i:040x}", v) for i, v in enumerate(values)]
    assert learn(varied)[L2_READ].pairs == 0


def test_each_counter_is_judged_against_its_own_noise() -> None:
    """A tiled SGEMM on the H200: L2 sectors read moved by 4-12% between runs of identical code,
    DRAM bytes read of a spilling one by up to 9%; instructions and load sectors not at all.
    Twenty runs of unchanged code give no notice; +0.5% instructions (a loop doing one more
    step in two hundred) is one, and so is a move of L2 reads beyond 3x what they wandered."""
    rng = np.random.default_rng(4)
    line = []
    for _ in range(20):
        line.append({INSTRUCTIONS: 4.2e9, SECTORS: 3.4e7, REQUESTS: 1.1e7,
                     L2_READ: 9e7 * (1 + rng.uniform(-0.12, 0.04)),
                     DRAM_READ: 6e8 * (1 + rng.uniform(-0.09, 0.03))})  # fmt: skip
    history = captures(line)
    notices = []
    for i in range(1, len(line)):
        noise = learn(history[:i])
        notices += [v for v in verdicts(line[i - 1], line[i], noise) if v.verdict == "changed"]
    assert notices == []
    noise = learn(history)
    assert noise[L2_READ].tolerance() > 0.04 and noise[INSTRUCTIONS].tolerance() == 0.001
    more = {**line[-1], INSTRUCTIONS: line[-1][INSTRUCTIONS] * 1.005}
    judged = {v.counter: v.verdict for v in verdicts(line[-1], more, noise)}
    assert judged[INSTRUCTIONS] == "changed" and judged[L2_READ] == "same"
    far = {**line[-1], L2_READ: line[-1][L2_READ] * (1 + 1.05 * noise[L2_READ].tolerance())}
    assert {v.counter: v.verdict for v in verdicts(line[-1], far, noise)}[L2_READ] == "changed"


# The L2 sectors read by a spilling SGEMM on an H200, each run of unchanged code, in the order
# they came (benchmarks/results/history_h200_wander and _after): small moves, then a large one.
SPILL_L2 = {
    "wander": [37141650, 37146781, 36962665, 36904087, 37104661, 37086907, 36440255],
    "after": [36815259, 36862265, 37079709, 36833661, 36902676, 36835165, 37219329, 37288476,
              36163031],
}  # fmt: skip


@pytest.mark.parametrize("recording", SPILL_L2)
def test_a_few_pairs_bound_the_next_move_by_how_little_they_know(recording: str) -> None:
    """Three to seven pairs of small moves (0.01-1.0%) say little about the tail: the next move
    of unchanged code (1.7% and 3.0% here; the first beyond three times the largest move before
    it, the rule this bound replaced) stays within the bound they give, which narrows as pairs
    come: from five pairs on, a true +10% of L2 reads is work (with three it may not be: the
    exact counters speak for a change of code)."""
    values = [{L2_READ: float(v)} for v in SPILL_L2[recording]]
    history = captures(values)
    bounds = []
    for i in range(MIN_PAIRS + 1, len(values)):
        noise = learn(history[:i])[L2_READ]
        assert noise.steady
        bounds.append(noise.tolerance())
        assert judge(L2_READ, values[i - 1][L2_READ], values[i][L2_READ], noise).verdict == "same"
        more = judge(L2_READ, values[i - 1][L2_READ], values[i - 1][L2_READ] * 1.10, noise)
        assert more.verdict == ("changed" if noise.pairs >= 5 else more.verdict)
    assert bounds[0] > bounds[2] > 0.01
    if recording == "wander":
        last = learn(history[:-1])[L2_READ]
        assert abs(values[-1][L2_READ] / values[-2][L2_READ] - 1) > 3 * last.largest


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


def test_a_capture_without_labels_shows_the_counters_by_name(server: LiveServer) -> None:
    """A document from a runner that sent no labels (the demo bundle's): its work verdicts and
    the kernel's work history name each counter as today's runner would, not as ncu does."""
    assert {c: METRICS[c] for c in WORK_LABELS} == WORK_LABELS  # one wording, runner and service
    history = ["c0", "c1"]
    with server.client(ADMIN_TOKEN) as admin:
        for i, label in enumerate(history):
            doc = document(commit=label, parents=history[i - 1 : i] if i else [],
                           ancestors=history[:i][::-1], minutes=i, seed=i,
                           medians={"gemm_bias_act_fwd": 5.0})  # fmt: skip
            metrics = post(admin, with_counters(doc, 1_000_000 + 50_000 * i, 65_536, labels=False))
        work = {w["counter"]: w for w in metrics["workloads"][0]["kernels"][0]["work"]}
        assert work[INSTRUCTIONS]["label"] == "instructions executed"
        assert work[INSTRUCTIONS]["note"] == "instructions executed +5.0%"
        series_id = metrics["workloads"][0]["kernels"][0]["metrics"][0]["series_id"]
        history_answer = admin.get(f"/api/v1/series/work?id={series_id}").json()
        assert history_answer["counters"][INSTRUCTIONS] == "instructions executed"


def test_runs_of_identical_code_give_no_notice_and_half_a_percent_more_instructions_one(
    server: LiveServer,
) -> None:
    """Through the service: twelve runs of unchanged code of a tiled kernel whose L2 and DRAM
    counters wander as the H200's did, each profiled at its commit under one determinant; then
    a commit whose loop does 0.5% more steps."""
    rng = np.random.default_rng(12)
    key = "d" * 64
    labels: list[str] = []
    with server.client(ADMIN_TOKEN) as admin:
        for i in range(13):
            label = f"c{i}"
            doc = document(commit=label, parents=labels[-1:], ancestors=labels[::-1], minutes=i,
                           seed=i, medians={"hist_tiled": 655.0})  # fmt: skip
            more = 1.005 if i == 12 else 1.0
            counters = {INSTRUCTIONS: 4.2e9 * more, SECTORS: 3.4e7 * more, REQUESTS: 1.1e7 * more,
                        L2_READ: 9e7 * (1 + rng.uniform(-0.12, 0.04)),
                        DRAM_READ: 6e8 * (1 + rng.uniform(-0.09, 0.03))}  # fmt: skip
            for w in doc["workloads"]:
                w["ncu"] = {"status": "ok", "kernels": [{
                    "kernel": "hist_tiled",
                    "metrics": {c: {"value": v, "unit": "", "label": METRICS[c]}
                                for c, v in counters.items()},
                    "determinants": key if i < 12 else "e" * 64,
                    "profiled_at": sha_for(label),
                }]}  # fmt: skip
            metrics = post(admin, doc)
            work = {v["counter"]: v for v in metrics["workloads"][0]["kernels"][0]["work"]}
            labels.append(label)
            if i < 12:
                assert [c for c, v in work.items() if v["verdict"] == "changed"] == [], (i, work)
        assert {c: v["verdict"] for c, v in work.items()} == {
            INSTRUCTIONS: "changed", SECTORS: "changed", REQUESTS: "changed",
            L2_READ: "same", DRAM_READ: "same",
        }  # fmt: skip
        assert work[INSTRUCTIONS]["note"] == "instructions executed +0.5%"
        assert work[L2_READ]["pairs"] == 11 and work[L2_READ]["tolerance"] > 0.04
        early = admin.get(f"/api/v1/commits/{sha_for('c2')}/metrics").json()
        learning = {v["counter"]: v for v in early["workloads"][0]["kernels"][0]["work"]}
        assert learning[L2_READ]["verdict"] == "learning"  # one pair of unchanged code so far
        assert "1 of 3 pairs" in learning[L2_READ]["note"]
        # Why it is silent, and what would make it speak, on the page as in the answer.
        assert "a profile the runner reused" in learning[L2_READ]["note"].lower()
        assert "KERNELWATCH_NCU_REUSE=0" in learning[L2_READ]["note"]
        page = admin.get(f"/commits/{sha_for('c2')}").text
        said = page.split('class="muted work-learning">', 1)[1].split("</p>", 1)[0]
        assert said.startswith("L2 sectors read by the SMs") and "KERNELWATCH_NCU_REUSE=0" in said
        assert early["verdict_counts"] == {"unchanged": 1}

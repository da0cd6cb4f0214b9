"""The bundled history of `kernelwatch demo` (dashboards/demo_history/): real runner documents.

The bundle was recorded on a GPU by `python -m benchmarks.demo_record` (the manifest names the GPU):
a copy of the default suite in a temporary git repository, twelve commits run one after another
with `kernelwatch-runner run`: a real regression (the transpose's shared tile lost its padding
column) and a later commit its fix, a commit whose dropout fails correctness and its fix, and a
second regression left open (the split-K GEMM epilogue's loads uncoalesced), plus a confirmation
(base and head interleaved) of each regressed commit. These tests hold the bundle to what the
demo loader relies on: every file loads and passes the service's validator, the commits form one
first-parent chain, the regressions, the fix and the failure are in the numbers, and the service
itself calls each regression a regression.
"""

from __future__ import annotations

import gzip
import json
import time
from functools import cache
from pathlib import Path
from typing import Any

from service.schemas.document import RunDocument, params_key

BUNDLE = Path(__file__).resolve().parents[2] / "dashboards" / "demo_history"
MAX_BUNDLE_BYTES = 3 * 2**20
SLOWER = 1.10  # a regression: the median up by more than 10% ...
BACK = 1.05  # ... and a fix: back within 5% of the median before the regression


@cache
def manifest() -> dict[str, Any]:
    return json.loads((BUNDLE / "manifest.json").read_text())


@cache
def load(file: str) -> dict[str, Any]:
    return json.loads(gzip.decompress((BUNDLE / file).read_bytes()))


def runs(kind: str = "run") -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(manifest entry, document) of every entry of this kind, in the manifest's order."""
    return [(e, load(e["file"])) for e in manifest()["runs"] if e["kind"] == kind]


def medians(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    """(workload, params key) -> the timing's summary (median, q1, q3) as the runner wrote it;
    a workload that failed correctness has none."""
    return {(w["name"], params_key(w["params"])): w["timing"] for w in doc["workloads"]
            if w.get("timing")}  # fmt: skip


def entry_with(word: str) -> int:
    """The index among the runs of the one whose manifest note holds `word`."""
    (index,) = [i for i, (e, _) in enumerate(runs()) if word in e["note"]]
    return index


def regression_and_fix() -> tuple[tuple[str, str], int, int]:
    """The workload, the index of the run where it got slower, and of the run that fixed it."""
    docs = [doc for _, doc in runs()]
    found = []
    for key in medians(docs[0]):
        if not all(key in medians(d) for d in docs):
            continue  # the workload that failed correctness once
        series = [medians(d)[key] for d in docs]
        for i in range(1, len(series)):
            before, at = series[i - 1], series[i]
            # slower by the floor, and clear of the noise: the IQRs do not touch
            if at["median"] > SLOWER * before["median"] and at["q1"] > before["q3"]:
                back = [
                    j
                    for j in range(i + 1, len(series))
                    if series[j]["median"] < BACK * before["median"] and series[j]["q3"] < at["q1"]
                ]
                if back:
                    found.append((key, i, back[0]))
    assert found, "no workload gets slower at one commit and comes back at a later one"
    assert len(found) == 1, f"more than one regression in the bundle: {found}"
    return found[0]


def test_the_manifest_says_how_it_was_recorded() -> None:
    recorded = manifest()["recorded"]
    gpus = {load(e["file"])["environment"]["gpu"]["name"] for e in manifest()["runs"]}
    assert gpus == {recorded["gpu"]} and recorded["gpu"].startswith("NVIDIA ")
    assert len(recorded["date"]) == 10 and recorded["date"].startswith("20")
    for word in ("kernelwatch-runner run", "regression", "padding", "confirmation"):
        assert word in recorded["how"], word
    entries = manifest()["runs"]
    assert 8 <= len(entries) <= 20
    assert {e["kind"] for e in entries} == {"run", "confirm", "bisect"}
    assert all(e["note"] for e in entries)
    assert len({e["file"] for e in entries}) == len(entries)


def test_the_bundle_is_small() -> None:
    files = [BUNDLE / "manifest.json", *(BUNDLE / e["file"] for e in manifest()["runs"])]
    assert sum(f.stat().st_size for f in files) < MAX_BUNDLE_BYTES
    # nothing in the folder that the manifest does not name (the loader reads the manifest)
    assert {p.name for p in BUNDLE.iterdir()} == {f.name for f in files}


def test_every_document_loads_and_validates() -> None:
    broken = runs()[entry_with("CORRECTNESS FAILURE")][0]["file"]
    for entry in manifest()["runs"]:
        doc = load(entry["file"])
        parsed = RunDocument.model_validate(doc)
        assert parsed.commit.sha == entry["commit"], entry["file"]
        paired = entry["kind"] in ("confirm", "bisect")
        assert (parsed.paired_base is not None) == paired, entry["file"]
        failing = [w.name for w in parsed.workloads if w.status != "ok"]
        if entry["file"] == broken:  # dropout's scale dropped: it fails, the others pass
            assert parsed.status == "failed" and failing == ["dropout"], failing
            (dropout,) = [w for w in parsed.workloads if w.name == "dropout"]
            assert dropout.status == "correctness_failed" and dropout.correctness
            assert not dropout.correctness.passed and dropout.timing is None
            continue
        assert parsed.status == "succeeded", (entry["file"], doc["log_tail"][-2000:])
        for w in parsed.workloads:
            assert w.status == "ok" and w.correctness and w.correctness.passed, (entry, w.name)
            assert w.timing is not None and w.timing.l2_flushed, (entry["file"], w.name)


def test_the_documents_are_comparable() -> None:
    """One repository, one branch, one GPU environment, the same workloads every time."""
    docs = [doc for _, doc in runs()]
    assert len({d["repository"]["name"] for d in docs}) == 1
    assert {d["branch"] for d in docs} == {"main"}
    assert len({d["environment"]["fingerprint"] for d in docs}) == 1
    assert len({frozenset(w["name"] for w in d["workloads"]) for d in docs}) == 1
    names = {w["name"] for w in docs[0]["workloads"]}
    assert {"gemm_fwd", "train_step", "transpose"} <= names
    gemm = next(w for w in docs[0]["workloads"] if w["name"] == "gemm_fwd")
    assert min(gemm["params"][k] for k in "mnk") >= 1024
    step = next(w for w in docs[0]["workloads"] if w["name"] == "train_step")
    assert step["timeline"] and step["timeline"]["kernels"]
    assert all(w["ncu"]["status"] == "ok" for d in docs for w in d["workloads"] if w.get("timing"))


def made() -> list[str]:
    """Every commit of the demo repository in order: the measured ones, and before a push's
    head the commits pushed with it (not measured on their own)."""
    out: list[str] = []
    for entry, _ in runs():
        out += entry.get("push_commits", [entry["commit"]])
    return out


def test_the_commits_form_a_first_parent_chain() -> None:
    chain, every = runs(), made()
    shas = [e["commit"] for e, _ in chain]
    assert len(set(shas)) == len(shas), "one run per commit"
    assert len(set(every)) == len(every)
    for entry, doc in chain:
        commit = doc["commit"]
        before = every[: every.index(entry["commit"])]
        assert commit["parents"][:1] == before[-1:], commit["sha"]
        assert commit["ancestors"] == before[::-1], commit["sha"]  # nearest first
    times = [doc["commit"]["committed_at"] for _, doc in chain]
    assert times == sorted(times)
    # the manifest lists the files in commit order, each confirmation and bisection after the
    # run it follows
    positions = [every.index(e["commit"]) for e in manifest()["runs"] if e["kind"] == "run"]
    assert positions == sorted(positions)


def test_one_workload_gets_slower_and_is_fixed_later() -> None:
    key, regressed, fixed = regression_and_fix()
    assert key[0] == "transpose"
    entries = [e for e, _ in runs()]
    assert "REGRESSION" in entries[regressed]["note"] and "FIX" in entries[fixed]["note"]
    confirmed = {e["commit"] for e in manifest()["runs"] if e["kind"] == "confirm"}
    assert confirmed == {entries[regressed]["commit"], entries[entry_with("PUSH'S HEAD")]["commit"]}


def test_the_second_regression_stays_until_the_end() -> None:
    docs = [doc for _, doc in runs()]
    at = entry_with("PUSH'S HEAD")
    gemm = [k for k in medians(docs[0]) if k[0] == "gemm_fwd"]
    assert gemm
    for key in gemm:
        before, after = medians(docs[at - 1])[key], medians(docs[at])[key]
        assert after["median"] > SLOWER * before["median"] and after["q1"] > before["q3"]
        # it stays: every later run clear of the level before it, by at least half the step
        later = [medians(d)[key] for d in docs[at:]]
        assert all(t["median"] > BACK * before["median"] and t["q1"] > before["q3"] for t in later)


def test_each_confirmation_times_base_and_head_interleaved() -> None:
    chain = [e["commit"] for e, _ in runs()]
    confirmations = runs("confirm")
    assert len(confirmations) == 2
    for _, head in confirmations:
        base = head["paired_base"]
        at = chain.index(head["commit"]["sha"])
        # the last measured commit before it: its parent, or for a push's head the commit
        # before the push
        assert base["commit"]["sha"] == chain[at - 1]
        slower = [k for k in medians(head) if medians(head)[k]["median"]
                  > SLOWER * medians(base)[k]["median"]]  # fmt: skip
        assert slower, head["commit"]["sha"]
        assert all(len(w["timing"]["processes"]) == 3 for w in head["workloads"])


def test_the_service_calls_the_regression_a_regression(server) -> None:
    from tests.conftest import ADMIN_TOKEN

    key, regressed, fixed = regression_and_fix()
    chain = runs()
    with server.client(ADMIN_TOKEN) as client:
        for entry, _ in chain:
            raw = gzip.decompress((BUNDLE / entry["file"]).read_bytes())
            answer = client.post(
                "/api/v1/runs", content=raw, headers={"Content-Type": "application/json"}
            )
            assert answer.status_code == 201, (entry["file"], answer.text[:2000])

        def metric(index: int, key: tuple[str, str] = key) -> dict[str, Any]:
            sha = chain[index][0]["commit"]
            deadline = time.monotonic() + 30
            page = client.get(f"/api/v1/commits/{sha}/metrics").json()
            while (page["analysis_pending"] or page["change_points_pending"]) and (
                time.monotonic() < deadline
            ):  # the change points follow the store by a moment
                time.sleep(0.2)
                page = client.get(f"/api/v1/commits/{sha}/metrics").json()
            (workload,) = [
                w for w in page["workloads"] if (w["workload"], params_key(w["params"])) == key
            ]
            (kernel,) = [k for k in workload["kernels"] if k["metrics"]]
            return kernel["metrics"][0]

        slower = metric(regressed)
        assert slower["baseline"]["commit"] == chain[regressed - 1][0]["commit"]
        assert slower["verdict"] == "regressed", slower
        assert slower["change"] > SLOWER - 1
        # At the fix, the baseline is the slow level since the regression (its segment), so
        # the fix is an improvement of the whole step. The slow level lasted two commits, fewer
        # than a change point needs (service.analysis.steps.MIN_SIZE): no change point here.
        back = metric(fixed)
        assert back["baseline"]["commit"] == chain[fixed - 1][0]["commit"]
        assert back["baseline"]["segment"]["start_commit"] == chain[regressed][0]["commit"]
        assert back["change"] < -(SLOWER - 1) / SLOWER, back
        assert back["verdict"] == "improved", back
        # The second regression stays to the end: a regression, and a change point where it
        # began, for the GEMM and for the training step that runs it.
        at = entry_with("PUSH'S HEAD")
        for workload in ("gemm_fwd", "train_step"):
            (series,) = [k for k in medians(chain[0][1]) if k[0] == workload]
            second = metric(at, series)
            assert second["verdict"] == "regressed", second
            assert second["baseline"]["commit"] == chain[at - 1][0]["commit"]
            assert second["change_point"]["commit"] == chain[at][0]["commit"], second
            assert second["change_point"]["change"] > 0.01


def test_the_push_is_bisected_to_the_commit_that_regressed() -> None:
    """The push's head regressed; the bisection tested the pushed commits as the service asks
    (the middle one against the last good commit, interleaved) and the second was bad."""
    (head,) = [e for e, _ in runs() if e.get("push_commits")]
    pushed = head["push_commits"]
    assert len(pushed) == 3 and pushed[-1] == head["commit"]
    bisections = runs("bisect")
    assert [e["commit"] for e, _ in bisections] == pushed[:2]
    before = made()[made().index(pushed[0]) - 1]  # the last measured commit before the push
    (first, good), (second, bad) = bisections
    assert good["paired_base"]["commit"]["sha"] == before
    assert bad["paired_base"]["commit"]["sha"] == pushed[0]
    for _, doc in bisections:
        assert {w["name"] for w in doc["workloads"]} == {"gemm_fwd", "train_step"}
    gemm = next(k for k in medians(bad) if k[0] == "gemm_fwd")
    assert medians(bad)[gemm]["median"] > SLOWER * medians(bad["paired_base"])[gemm]["median"]
    assert medians(good)[gemm]["median"] < 1.01 * medians(good["paired_base"])[gemm]["median"]
    assert "bad" in second["note"] and "good" in first["note"]

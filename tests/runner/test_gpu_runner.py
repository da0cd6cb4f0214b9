"""The runner on the real suite and a real GPU: one run of a quick subset, checked end to end.

The subset: the smoke shapes (short kernels: CUPTI timing), one 1024^3 forward GEMM (CUDA
events) and the small training step (the kernel timeline). Skipped without CuPy or a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.runner_cost import ROOT, snapshot
from kernels.workloads import all_workloads
from runner.profile import ncu
from runner.run.pipeline import RunRequest, execute
from runner.run.timing_passes import SHORT_NOTE, short_processes
from runner.suite.load import load_suite

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]

ONLY = (
    r"m=32,n=64\]|^gemm_fwd\[act=gelu,k=1024,m=1024,n=1024\]|^train_step\[batch=256,"
    r"|^adamw\[sizes=1001x|^dropout\[n=4099,|^transpose\[cols=70,"
)


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gpu-run")
    repo = tmp / "repo"
    repo.mkdir()
    sha = snapshot(ROOT, repo, "Ada Lovelace <ada@example.com>", "the working tree")
    return execute(RunRequest(source=str(repo), rev=sha, only=ONLY, cache_dir=tmp / "cache"))


def by_name(doc: dict[str, Any], name: str, **params: Any) -> dict[str, Any]:
    for w in doc["workloads"]:
        if w["name"] == name and all(w["params"].get(k) == v for k, v in params.items()):
            return w
    raise AssertionError(f"no workload {name} {params}")


def test_every_selected_workload_is_correct_and_timed(document: dict[str, Any]) -> None:
    names = {w["name"] for w in document["workloads"]}
    assert {"gemm_fwd", "gemm_bwd", "cublas_gemm", "train_step", "adamw", "dropout"} <= names
    assert document["status"] == "succeeded", document["log_tail"][-3000:]
    for w in document["workloads"]:
        assert w["correctness"]["passed"], w
        timing = w["timing"]
        assert timing["method"] in ("cuda_events", "cupti")
        assert timing["l2_flushed"] is True
        # the suite's 3 processes; a short launch (every one of them sampled it on several
        # placements) in more processes, each marked in the stop reason (runner.run.pipeline)
        if SHORT_NOTE.split("(")[0] in timing["stop_reason"]:
            assert len(timing["processes"]) == short_processes(load_suite(ROOT)) > 3
        else:
            assert len(timing["processes"]) == 3
        assert all(p["samples"] and p["sm_clock_mhz"] for p in timing["processes"])
        assert timing["median"] > 0


def test_every_workload_is_timed_as_its_definition_declares(document: dict[str, Any]) -> None:
    declared = {(w.name, json.dumps(w.params, sort_keys=True)): w for w in all_workloads()}
    for w in document["workloads"]:
        method = declared[w["name"], json.dumps(w["params"], sort_keys=True)].timing_method
        assert w["timing"]["method"] == method, (w["name"], w["params"])
    gemm = by_name(document, "gemm_fwd", m=1024, n=1024, k=1024)
    assert gemm["timing"]["method"] == "cuda_events"
    # ~90 us: a short launch, timed in the extra processes too
    assert len(gemm["timing"]["processes"]) == short_processes(load_suite(ROOT))
    smoke = by_name(document, "gemm_fwd", m=32, n=64, k=16, act="relu")
    assert smoke["timing"]["method"] == "cupti"
    assert smoke["timing"]["median"] < 20


def test_ncu_section_holds_the_fixed_metrics_and_findings(document: dict[str, Any]) -> None:
    for w in document["workloads"]:
        section = w["ncu"]
        assert section["status"] == "ok", (w["name"], w["params"], section["reason"])
        assert section["kernels"]
        for kernel in section["kernels"]:
            missing = set(ncu.METRICS) - set(kernel["metrics"])
            assert not missing, (kernel["kernel"], missing)
            assert kernel["metrics"]["gpu__time_duration.sum"]["value"] > 0
        if w["kernels"]:  # the suite's own kernels, by name
            assert {k["kernel"] for k in section["kernels"]} == set(w["kernels"])
    gemm = by_name(document, "gemm_fwd", m=1024, n=1024, k=1024)
    assert any(k["findings"] for k in gemm["ncu"]["kernels"])


def test_the_training_step_has_a_timeline_whose_shares_sum_to_one(
    document: dict[str, Any],
) -> None:
    step = by_name(document, "train_step", batch=256)
    line = step["timeline"]
    assert line["source"] in ("nsys", "cupti") and line["reason"]
    assert {k["kernel"] for k in line["kernels"]} == set(step["kernels"])
    assert sum(k["share"] for k in line["kernels"]) == pytest.approx(1.0, abs=1e-3)
    assert sum(k["calls"] for k in line["kernels"]) >= 7
    total_us = sum(k["total_ns"] for k in line["kernels"]) / 1e3
    assert 0.5 * step["timing"]["median"] < total_us <= 1.05 * step["timing"]["median"]
    others = [w for w in document["workloads"] if w["name"] != "train_step"]
    assert all(w["timeline"] is None for w in others)


def test_build_resources_cover_every_kernel(document: dict[str, Any]) -> None:
    built = {k["kernel"]: k for k in document["build"]["kernels"]}
    assert document["build"]["status"] == "ok"
    for w in document["workloads"]:
        for name in w["kernels"]:
            assert built[name]["registers"] > 0 and built[name]["arch"].startswith("sm_")


def test_environment_is_filled(document: dict[str, Any]) -> None:
    env = document["environment"]
    gpu = env["gpu"]
    assert gpu["name"] and gpu["uuid"].startswith("GPU-")
    assert gpu["sm_count"] > 0 and gpu["memory_bytes"] > 2**30 and gpu["compute_capability"]
    for key in ("driver_version", "cuda_runtime_version", "cupy_version", "nvcc_version"):
        assert env[key], key
    assert env["ncu_version"]
    assert env["clocks_mhz"]["sm_max"] > 0 and env["clocks_mhz"]["sm_seen_max"] > 0
    assert env["ecc_enabled"] in (True, False)
    assert env["mig_mode"] in ("enabled", "disabled", "unsupported")
    assert env["host"]["hostname"] and len(env["fingerprint"]) == 16


def test_throttling_across_the_samples_is_recorded(document: dict[str, Any]) -> None:
    from runner.host import environment, gpuinfo

    if not gpuinfo.violation_ns():
        pytest.skip("NVML counts no clock violations on this GPU")
    env = document["environment"]
    section = env[environment.THROTTLE_KEY]
    assert set(section) == {"source", "violation_ms", "workloads"}
    named = {name for name, ms in section["violation_ms"].items() if ms > 0}
    assert named <= set(env["throttle_reasons_seen"])
    ids = {f"{w['name']}[" for w in document["workloads"]}
    for wid, processes in section["workloads"].items():
        assert wid[: wid.index("[") + 1] in ids
        for p in processes:
            assert 0 <= p["process"] < 3 and p["window_ms"] > 0
            assert p["violation_ms"] and all(ms > 0 for ms in p["violation_ms"].values())
    for w in document["workloads"]:
        for p in w["timing"]["processes"]:
            assert "gpu_idle" not in p["throttle_reasons"]


def test_the_service_accepts_the_document(document: dict[str, Any]) -> None:
    pytest.importorskip("pydantic", reason="the service's validator needs pydantic")
    try:
        from service.schemas.document import RunDocument
    except ImportError as exc:  # a GPU host without the service's dependencies
        pytest.skip(f"the service is not importable here: {exc}")
    RunDocument.model_validate(document)


def test_snapshot_is_a_git_repository_of_the_working_tree(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    sha = snapshot(ROOT, repo, "A <a@b.c>", "m")
    assert len(sha) == 40 and (repo / "kernelwatch.toml").is_file()
    assert not (repo / ".venv").exists()

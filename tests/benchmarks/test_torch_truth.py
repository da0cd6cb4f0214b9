"""benchmarks/torch_truth.py on the CPU: it times each workload of the example suite by the method
the suite declares, loads a tree's modules under names of their sources, refuses a failed
operator build in one message, and its recorded truths are its processes' means (the timing
itself needs torch, Triton and a GPU)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import torch_gpu, torch_truth

EXAMPLE = torch_gpu.EXAMPLE
RESULTS = Path(torch_truth.__file__).parent / "results"
KNOWN = {"scale_rows", "softmax"}  # the workloads torch_truth.launcher knows how to launch


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch):
    """The example suite's workloads module as the truth loads it (its torch imports are lazy)."""
    name = "kw_truth_test_workloads"
    monkeypatch.delitem(sys.modules, name, raising=False)
    module = torch_truth._module(EXAMPLE / "torch_kernels" / "workloads.py", name)
    assert sys.modules[name] is module  # Triton reads a kernel's source through its module
    yield module
    sys.modules.pop(name, None)


def test_each_workload_is_timed_by_the_method_the_suite_declares(example) -> None:
    suite = {w.id: w for w in example.all_workloads()}
    assert set(torch_gpu.SERIES) <= set(suite)
    for wid in torch_gpu.SERIES:
        w = suite[wid]
        assert w.name in KNOWN
        if w.timing_method == "cupti":
            assert torch_truth.CUPTI_KERNELS[w.name] == w.kernels
        else:
            assert (w.timing_method, w.name in torch_truth.CUPTI_KERNELS) == ("cuda_events", False)
    assert {suite[w].timing_method for w in torch_gpu.SERIES} == {"cupti", "cuda_events"}


def test_a_trees_sources_are_loaded_under_names_of_their_digest(example) -> None:
    """Base and head trees in one process: each source under a name of its own text."""
    assert example.DECLARATION.startswith("torch::Tensor scale_rows(torch::Tensor x,")
    text = (EXAMPLE / "torch_kernels" / "scale_rows.cu").read_text()
    assert torch_truth._digest(text) == hashlib.sha1(text.encode()).hexdigest()[:12]
    assert torch_truth._digest(text) != torch_truth._digest(text + "\n")


def test_prebuild_builds_nothing_without_an_operator_workload(tmp_path: Path) -> None:
    spec = {"pairs": {"2": {"base": str(tmp_path / "missing-a"), "head": str(tmp_path / "b"),
                            "workloads": ["softmax[cols=1024,rows=4096]"]}}}  # fmt: skip
    assert torch_truth.prebuild(spec) is None
    assert list(tmp_path.iterdir()) == []


def test_a_failed_operator_build_stops_the_truth_with_its_error(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "torch_kernels").mkdir(parents=True)
    shutil.copy(EXAMPLE / "torch_kernels" / "scale_rows.cu", tree / "torch_kernels")
    # No workloads.py (and here no torch either): the build's process fails, named.
    spec = {"pairs": {"4": {"base": str(tree), "head": str(tree),
                            "workloads": ["scale_rows[cols=1024,rows=1024]"]}}}  # fmt: skip
    with pytest.raises(SystemExit) as stopped:
        torch_truth.prebuild(spec)
    message = str(stopped.value.code)
    assert message.startswith("the truth's operator build failed: ")
    assert "Traceback" in message and "Error" in message.splitlines()[-1]


@pytest.mark.parametrize("card", ["torch_h100", "torch_h200"])
def test_a_recorded_truth_is_the_mean_of_its_processes(card: str) -> None:
    saved = json.loads((RESULTS / card / "truth.json").read_text())
    assert saved["seconds"] > 0 and saved["pairs"]
    for pair, workloads in saved["pairs"].items():
        assert set(workloads) <= set(torch_gpu.SERIES), pair
        for wid, t in workloads.items():
            assert len(t["process_changes"]) == torch_truth.PROCESSES, (pair, wid)
            assert t["change"] == pytest.approx(float(np.mean(t["process_changes"]))), (pair, wid)
            assert t["base_us"] > 0 and t["head_us"] > 0

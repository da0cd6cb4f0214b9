"""The compiled facts of a kernel that changed between two runs, in the author's terms."""

from __future__ import annotations

from service.analysis.knobs import by_kernel, describe, knob_changes

MATMUL = {"kernel": "matmul_kernel", "compiler": "triton", "threads": 256, "registers": 168,
          "shared_bytes": 98304, "local_bytes": 0, "num_warps": 8, "num_stages": 3,
          "target": "cuda:90"}  # fmt: skip


def test_fewer_stages_are_named_with_the_shared_memory_they_freed() -> None:
    head = {**MATMUL, "num_stages": 1, "shared_bytes": 32768}
    (change,) = knob_changes({"matmul_kernel": MATMUL}, {"matmul_kernel": head})
    assert change.describe() == "matmul_kernel: num_stages 3 → 1, shared memory 96 → 32 KiB"
    assert change.as_dict()["facts"][0] == {"fact": "num_stages", "base": 3, "head": 1}


def test_fewer_warps_say_it_once_not_again_as_threads() -> None:
    head = {**MATMUL, "num_warps": 4, "threads": 128, "registers": 255, "local_bytes": 24}
    (change,) = knob_changes({"matmul_kernel": MATMUL}, {"matmul_kernel": head})
    assert change.describe() == (
        "matmul_kernel: num_warps 8 → 4, registers 168 → 255, local memory 0 → 24 B/thread"
    )


def test_a_fact_one_side_does_not_know_is_no_change() -> None:
    older = {k: v for k, v in MATMUL.items() if k not in ("num_stages", "num_warps")}
    head = {**MATMUL, "num_stages": 1}
    assert knob_changes({"matmul_kernel": older}, {"matmul_kernel": head}) == []


def test_the_same_facts_and_kernels_on_one_side_only_are_no_change() -> None:
    assert knob_changes({"matmul_kernel": MATMUL}, {"matmul_kernel": dict(MATMUL)}) == []
    assert knob_changes({"a": MATMUL}, {"b": {**MATMUL, "num_stages": 1}}) == []


def test_a_kernel_ptxas_reported_leaves_its_resources_to_that_report() -> None:
    base = {"gemm": {"kernel": "gemm", "threads": 256, "registers": 64, "shared_bytes": 0}}
    head = {"gemm": {"kernel": "gemm", "threads": 128, "registers": 96, "shared_bytes": 0}}
    (change,) = knob_changes(base, head, ptxas={"gemm"})
    assert change.describe() == "gemm: threads 256 → 128"
    assert knob_changes(base, {"gemm": {**head["gemm"], "threads": 256}}, ptxas={"gemm"}) == []


def test_the_attributions_kernels_come_first_and_a_summary_names_three() -> None:
    base = {k: {"kernel": k, "num_warps": 4} for k in "abcde"}
    head = {k: {"kernel": k, "num_warps": 8} for k in "abcde"}
    changes = knob_changes(base, head, order=["d", "b"])
    assert [c.kernel for c in changes] == ["d", "b", "a", "c", "e"]
    said = describe(changes)
    assert said.startswith("d: num_warps 4 → 8; b: num_warps 4 → 8; a: num_warps 4 → 8; 2 more")


def test_an_autotuners_other_config_is_named() -> None:
    base = {"k": {"kernel": "k", "config": "BLOCK_M: 128, num_warps: 8"}}
    head = {"k": {"kernel": "k", "config": "BLOCK_M: 64, num_warps: 8"}}
    (change,) = knob_changes(base, head)
    assert change.describe() == (
        "k: config (BLOCK_M: 128, num_warps: 8) → (BLOCK_M: 64, num_warps: 8)"
    )


def test_stored_rows_by_kernel_skip_what_is_no_kernel() -> None:
    assert by_kernel([MATMUL, {"threads": 3}, "junk"]) == {"matmul_kernel": MATMUL}

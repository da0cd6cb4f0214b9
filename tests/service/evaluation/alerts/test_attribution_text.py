"""An alert's one-line summary (service.evaluation.alerts.attribution_text) on plain values: the
workload and its change first (with the parameters it was redefined from), then what the author
changed, then at most two kernels in the order given, each with its share of the slowdown only
where several share it, at most two causes, ptxas resources that moved and the first new ncu
finding; without kernels, why none is named; and beside the kernels the software and the
workload's choices that differ, a missing side said as "nothing"."""

from __future__ import annotations

from typing import Any

from service.analysis.knobs import KnobChange
from service.evaluation.alerts.attribution_text import beside_kernels, share_text, summary
from service.models import Series

GEMM = Series(workload="gemm_fwd", params={"m": 1024, "n": 1024, "k": 1024, "act": "gelu"})


def kernel(name: str, change: float, share: float, **extra: Any) -> dict[str, Any]:
    return {"kernel": name, "change": change, "share": share, "ncu": True, "resources": [],
            **extra}  # fmt: skip


def cause(kernel: str, label: str, share: float) -> dict[str, Any]:
    return {"kernel": kernel, "label": label, "workload_share": share}


def test_a_share_from_99_5_percent_reads_as_all_of_it() -> None:
    assert share_text(0.995) == "≈ 100%"
    assert share_text(0.994) == "≈ 99%"
    assert share_text(0.2) == "≈ 20%"


def test_without_a_kernel_the_summary_says_whether_any_data_could_name_one() -> None:
    # A capture that shows no kernel grew differs from having nothing to look at.
    grew = summary(GEMM, 0.19, [], [], ncu=True)
    assert grew == "gemm_fwd 1024³ gelu +19.0%: no kernel's time grew"
    assert summary(GEMM, 0.19, [], [], ncu=False) == (
        "gemm_fwd 1024³ gelu +19.0%: no ncu data or kernel timeline for this run"
    )


def test_a_redefined_workload_names_the_parameters_it_had() -> None:
    before = Series(workload="reduce", params={"blocks": 1056})
    after = Series(workload="reduce", params={"blocks": 132})
    text = summary(after, 2.16, [], [], ncu=False, before=before)
    assert text.startswith("reduce blocks=132 (redefined from reduce blocks=1056) +216.0%: ")
    # The same parameters under a retired series are no redefinition worth a word.
    assert "redefined" not in summary(after, 0.1, [], [], ncu=False, before=after)


def test_a_lone_kernel_carries_no_share_and_at_most_two_causes() -> None:
    causes = [cause("k", "DRAM bytes read", 0.7), cause("k", "occupancy", 0.2),
              cause("k", "spills", 0.1)]  # fmt: skip
    text = summary(GEMM, 0.12, [kernel("k", 0.12, 1.0)], causes, ncu=True)
    assert text == (
        "gemm_fwd 1024³ gelu +12.0%: kernel k +12%: DRAM bytes read (≈ 70% of the slowdown), "
        "occupancy (≈ 20% of the slowdown)"
    )


def test_several_kernels_each_carry_their_share_and_only_the_first_two_are_named() -> None:
    kernels = [kernel("a", 0.3, 0.6), kernel("b", 0.2, 0.3), kernel("c", 0.1, 0.1)]
    text = summary(GEMM, 0.2, kernels, [cause("b", "L2 sectors", 0.25)], ncu=True)
    assert "kernel a +30% (≈ 60% of the slowdown): unexplained by its counters" in text
    assert "kernel b +20% (≈ 30% of the slowdown): L2 sectors (≈ 25% of the slowdown)" in text
    assert "kernel c" not in text


def test_resources_that_moved_and_the_first_new_finding_follow_the_kernel() -> None:
    row = kernel(
        "k", 0.2, 1.0, ncu=False,
        resources=[{"resource": "spill_stores_bytes", "base": 0, "head": 128}],
        findings_appeared=[{"rule": "AchievedOccupancy", "estimated_speedup": 17.4},
                           {"rule": "Later", "estimated_speedup": 3.0}],
    )  # fmt: skip
    text = summary(GEMM, 0.2, [row], [], ncu=True)
    assert text.endswith(
        "kernel k +20%; spill stores (B) 0→128; new finding AchievedOccupancy (est. 17%)"
    )
    # A finding without an estimate says none.
    row["findings_appeared"] = [{"rule": "AchievedOccupancy", "estimated_speedup": None}]
    assert summary(GEMM, 0.2, [row], [], ncu=True).endswith("new finding AchievedOccupancy")


def test_what_the_author_turned_leads_the_kernels() -> None:
    turned = [KnobChange("matmul", (("num_stages", 3, 1),))]
    alone = summary(GEMM, 0.1, [], [], ncu=False, turned=turned)
    # A knob the author turned is the explanation: no "no ncu data" after it.
    assert alone == "gemm_fwd 1024³ gelu +10.0%: matmul: num_stages 3 → 1"
    with_kernel = summary(GEMM, 0.1, [kernel("matmul", 0.1, 1.0)], [], ncu=True, turned=turned)
    assert with_kernel == (
        "gemm_fwd 1024³ gelu +10.0%: matmul: num_stages 3 → 1; kernel matmul +10%: "
        "unexplained by its counters"
    )


def test_software_and_choices_that_differ_are_said_beside_the_kernels() -> None:
    upgraded = [{"name": "torch", "base": "2.5.0", "head": "2.6.0"}]
    chose = [{"name": "gemm", "base": "BLOCK_M=128", "head": None}]
    assert beside_kernels(upgraded, chose) == (
        "torch 2.5.0→2.6.0, gemm chose nothing (was BLOCK_M=128)"
    )
    assert beside_kernels(None, None) == ""
    text = summary(GEMM, 0.1, [], [], ncu=True, upgraded=upgraded)
    assert text == "gemm_fwd 1024³ gelu +10.0%: no kernel's time grew; torch 2.5.0→2.6.0"

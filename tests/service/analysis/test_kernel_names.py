"""Which kernels an attribution looks at, on plain lists: declared by name or pattern first, then
every other kernel the launch ran."""

from __future__ import annotations

from service.analysis.kernel_names import attributed, declared


def test_a_compiled_models_generated_kernels_are_named_by_pattern() -> None:
    seen = ["cutlass_80_simt_sgemm_128x64", "triton_poi_fused_add_mul_relu_0",
            "triton_red_fused_sum_1"]  # fmt: skip
    assert attributed(["triton_*"], seen) == [
        "triton_poi_fused_add_mul_relu_0",
        "triton_red_fused_sum_1",
        "cutlass_80_simt_sgemm_128x64",  # not declared: still attributed, after those declared
    ]
    assert declared("triton_red_fused_sum_1", ["triton_*"])
    assert not declared("xtriton_red", ["triton_*"])


def test_names_are_exact_and_what_nothing_saw_keeps_its_declared_names() -> None:
    assert attributed(["saxpy"], ["saxpy", "fill"]) == ["saxpy", "fill"]
    assert attributed(["saxpy", "triton_*"], []) == ["saxpy"]  # no capture, no timeline
    assert attributed([], ["a", "b", "a"]) == ["a", "b"]

"""Every workload against its float64 reference on the GPU (marked gpu; skipped without one)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels import reference
from kernels.check import check, compare_outputs, run_check, summarize
from kernels.gemm import CublasGemm, GemmBwd, GemmFwd, GemmFwdTF32
from kernels.memory import AdamW, Dropout, Transpose
from kernels.timing import L2Flusher, TracedLibrary, time_launch
from kernels.train import TrainStep
from kernels.workloads import all_workloads

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("w", all_workloads(), ids=lambda w: w.id)
def test_workload_matches_reference(w, library):
    verdict, detail = run_check(w, seed=0, library=library)
    assert verdict["passed"], detail
    assert verdict["unwritten"] == 0


@pytest.mark.parametrize("act", reference.ACTIVATIONS)
def test_gemm_ragged_shapes_every_activation(act, library):
    # edges in every dimension: M, N, K not multiples of the 128 or 8 tiles
    for w in (
        GemmFwd(132, 260, 36, act),
        GemmBwd(132, 260, 36, act),
        GemmFwdTF32(132, 260, 36, act),
    ):
        v = check(w, seed=5, library=library)
        assert v["passed"], (w.id, v)


def test_split_k_forward_with_ragged_k(library):
    w = GemmFwd(132, 260, 1052, "gelu")  # 6 tiles: K split in two, K not a multiple of 8
    assert w.kernels == ("gemm_fwd_splitk_partial", "gemm_splitk_epilogue")
    v = check(w, seed=4, library=library)
    assert v["passed"], v


def test_small_odd_memory_shapes(library):
    for w in (Dropout(7, 0.5), Transpose(1, 37), Transpose(65, 3)):
        v = check(w, seed=2, library=library)
        assert v["passed"], (w.id, v)


def test_unwritten_elements_are_caught(library):
    inst = GemmFwd(64, 64, 16, "relu").prepare(0, library)
    inst.poison()  # no launch
    v = summarize(compare_outputs(inst.fetch(), inst.reference()), 1e-4, "fp32")
    assert not v["passed"] and v["unwritten"] == 2 * 64 * 64


def test_train_step_runs_its_kernels_and_no_transpose(library):
    w = TrainStep(256, 128, 256, 128)
    inst = w.prepare(0, library)
    traced = TracedLibrary(library)
    inst.lib = traced
    inst.launch()
    calls = {k: v["calls"] for k, v in traced.breakdown().items()}
    assert "transpose_tiled" not in calls
    assert calls == {
        "gemm_bias_act_fwd": 2,
        "mse_loss_grad": 1,
        "gemm_bwd_tn_dweight": 2,
        "gemm_bwd_nt_dinput": 1,
        "adamw_multi": 1,
    }
    assert set(calls) == set(w.kernels)


def test_repeated_launches_are_deterministic(library):
    inst = TrainStep(64, 32, 64, 32).prepare(3, library)
    inst.launch()
    first = inst.fetch()
    inst.reset()
    inst.launch()
    second = inst.fetch()
    for k in ("loss", "gw1", "gb1", "m_w2", "delta_w1"):
        np.testing.assert_array_equal(first[k], second[k], err_msg=k)


def test_timing_gives_positive_samples(library):
    inst = GemmFwd(256, 256, 256, "gelu").prepare(0, library)
    samples = time_launch(inst.launch, samples=5, warmup=2, flush=L2Flusher())
    assert len(samples) == 5 and all(s > 0 for s in samples)


def test_nvrtc_fallback_builds_and_runs(library):  # library: skips without a GPU
    from kernels import build
    from kernels.device import KernelLibrary

    lib = KernelLibrary(build.build_nvrtc())
    assert lib.build.compiler == "nvrtc"
    assert lib.build.kernels["gemm_bias_act_fwd"].registers > 0
    for w in (GemmFwd(64, 64, 32, "gelu"), GemmBwd(64, 64, 32, "tanh"), Dropout(1000, 0.3)):
        v = check(w, seed=1, library=lib)
        assert v["passed"], (w.id, v)


DEVICE_DRAWN = [
    GemmFwd(1024, 1024, 1024, "gelu"),  # split-K: a workspace
    GemmBwd(256, 256, 256, "relu"),
    GemmFwdTF32(256, 256, 256, "gelu"),
    CublasGemm(256, 256, 256),
    TrainStep(256, 1024, 4096, 1024),
    AdamW((1001, 64, 4099)),
    Dropout(1 << 20, 0.1),
    Transpose(33, 70),
]


@pytest.mark.parametrize("w", DEVICE_DRAWN, ids=lambda w: w.id)
def test_device_drawn_inputs_are_the_host_kind_and_check_against_their_reference(w, library):
    """What the timing processes launch: inputs drawn on the GPU, of the host inputs' shapes,
    dtypes and spread, correct against the float64 reference of those very inputs; `reset`
    restores what a launch updates, so a second launch gives the same outputs."""
    import cupy

    host = w.make_inputs(0)
    inst = w.prepare(0, library, inputs="device")
    try:
        assert list(inst.inputs) == list(host)
        for k, v in host.items():
            d = inst.inputs[k]
            assert d.shape == v.shape and d.dtype == v.dtype, k
            assert isinstance(d, cupy.ndarray) == (v.dtype == np.float32), k
            if v.dtype == np.float32 and v.size >= 4096 and v.std() > 0:
                assert float(d.std()) == pytest.approx(float(v.std()), rel=0.05), k
                assert abs(float(d.mean()) - float(v.mean())) < 6 * float(v.std()) / v.size**0.5
        inst.poison()
        inst.launch()
        first = {k: v.copy() for k, v in inst.fetch(cupy).items()}
        verdict = summarize(
            compare_outputs(first, inst.reference(cupy), cupy), w.tolerance, w.precision
        )
        assert verdict["passed"], verdict
        inst.reset()
        inst.launch()
        second = inst.fetch(cupy)
        for k, v in first.items():
            cupy.testing.assert_array_equal(v, second[k], err_msg=k)
        assert set(inst.fetch()) == set(first)  # host fetch works on device inputs too
    finally:
        inst.close()

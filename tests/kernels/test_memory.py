"""kernels/memory.py on the CPU: the memory-bound workloads' declarations (ids, kernels,
outputs, FLOP and byte counts worked out by hand), their inputs (per-tensor keys, shapes, float32,
AdamW's second moments in their range, dropout's uint64 seed) and their float64 references: one
AdamW step (torch.optim.AdamW's decoupled weight decay, bias-corrected moments) worked out by
hand, dropout's zero-or-scaled elements, a transpose. Their launches need CuPy and a GPU
(tests/kernels/test_gpu.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels import reference
from kernels.memory import AdamW, Dropout, Transpose

# --- AdamW ------------------------------------------------------------------------------------


def test_adamw_is_one_launch_over_every_tensor() -> None:
    w = AdamW((3, 5))
    assert w.id == "adamw[sizes=3x5]" and w.params == {"sizes": [3, 5]}
    assert w.kernels == ("adamw_multi",)
    # Every tensor's parameter change, then every first moment, then every second moment.
    assert w.outputs == ("delta0", "delta1", "m0", "m1", "v0", "v1")


def test_adamw_counts_twelve_flops_and_seven_fp32_words_an_element() -> None:
    w = AdamW((3, 5))  # 8 elements: read p, g, m, v; write p, m, v
    assert (w.flops, w.bytes) == (12 * 8, 7 * 4 * 8)


def test_adamw_inputs_are_four_float32_tensors_per_size() -> None:
    x = AdamW((3, 5)).make_inputs(0)
    assert list(x) == ["p0", "g0", "m0", "v0", "p1", "g1", "m1", "v1"]
    assert all(v.dtype == np.float32 for v in x.values())
    assert [x[f"p{i}"].shape for i in (0, 1)] == [(3,), (5,)]
    big = AdamW((10_000,)).make_inputs(1)["v0"]
    assert big.min() >= 0.5e-6 and big.max() <= 1.5e-6  # second moments: U(0.5e-6, 1.5e-6)


def test_adamw_steps_with_the_suites_settings_from_a_warm_state() -> None:
    assert AdamW.OPT is reference.ADAMW
    assert AdamW.OPT == {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                         "weight_decay": 0.01, "step": 10}  # fmt: skip


def test_without_gradient_or_moments_adamw_only_decays_the_weight() -> None:
    one = np.array([1.0])
    zero = np.array([0.0])
    out = AdamW((1,)).reference({"p0": one, "g0": zero, "m0": zero, "v0": zero})
    # Decoupled weight decay: p (1 - lr wd) = 1 - 1e-4; the moments stay 0.
    assert out["delta0"][0] == pytest.approx(-1e-4, rel=1e-9)
    assert out["m0"][0] == 0.0 and out["v0"][0] == 0.0


def test_adamw_step_of_a_unit_gradient_worked_out_by_hand() -> None:
    zero = np.array([0.0])
    out = AdamW((1,)).reference({"p0": zero, "g0": np.array([1.0]), "m0": zero, "v0": zero})
    m, v = 0.1, 0.001  # (1 - beta1) g and (1 - beta2) g^2
    bc1, bc2 = 1 - 0.9**10, 1 - 0.999**10  # bias corrections at step 10
    step = 1e-2 / bc1 * m / (math.sqrt(v) / math.sqrt(bc2) + 1e-8)
    assert out["m0"][0] == pytest.approx(m) and out["v0"][0] == pytest.approx(v)
    assert out["delta0"][0] == pytest.approx(-step, rel=1e-12)
    assert -step == pytest.approx(-0.0048443, rel=1e-4)  # the same, as a number


# --- dropout ----------------------------------------------------------------------------------


def test_dropout_declaration_and_counts() -> None:
    w = Dropout(4099, 0.1)
    assert (w.id, w.kernels, w.outputs) == ("dropout[n=4099,p=0.1]", ("dropout_fwd",), ("y",))
    assert (w.flops, w.bytes) == (4099, 8 * 4099)  # one multiply; read x, write y


def test_dropout_inputs_are_the_tensor_and_a_uint64_seed() -> None:
    x = Dropout(4099, 0.1).make_inputs(0)
    assert x["x"].dtype == np.float32 and x["x"].shape == (4099,)
    assert x["seed"].dtype == np.uint64 and x["seed"].shape == () and int(x["seed"]) < 2**63


def test_dropout_reference_zeroes_or_scales_each_element_by_one_over_keep() -> None:
    w = Dropout(4099, 0.5)
    i = w.make_inputs(0)
    x = i["x"].astype(np.float64)
    y = w.reference({"x": x, "seed": i["seed"]})["y"]
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2.0 * x[kept], rtol=1e-15)
    assert 0.45 < kept.mean() < 0.55  # p = 0.5 of 4099 elements dropped
    # The mask is the seed's Philox stream, the kernel's: another seed drops others.
    other = w.reference({"x": x, "seed": np.uint64(int(i["seed"]) + 1)})["y"]
    assert not np.array_equal(kept, other != 0)


def test_dropout_with_p_zero_is_the_identity() -> None:
    x = np.arange(1.0, 9.0)
    y = Dropout(8, 0.0).reference({"x": x, "seed": np.uint64(123)})["y"]
    np.testing.assert_array_equal(y, x)


# --- transpose --------------------------------------------------------------------------------


def test_transpose_moves_bytes_and_computes_nothing() -> None:
    w = Transpose(33, 70)
    assert (w.id, w.kernels, w.outputs) == ("transpose[cols=70,rows=33]", ("transpose_tiled",),
                                            ("out",))  # fmt: skip
    assert (w.flops, w.bytes) == (0, 8 * 33 * 70)
    x = w.make_inputs(0)["x"]
    assert x.dtype == np.float32 and x.shape == (33, 70)


def test_transpose_reference_is_the_c_contiguous_transpose() -> None:
    out = Transpose(2, 3).reference({"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])})["out"]
    np.testing.assert_array_equal(out, [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    assert out.flags.c_contiguous  # compared with the kernel's C-ordered output

"""kernels/train.py on the CPU: the training step's declaration (parameters, the kernels of its
seven launches each named once and no transpose, its outputs, FLOP and byte counts worked out by
hand from kernels/counts.py's formulas), its inputs (shapes, float32, a warm optimizer state:
first moments 0, second moments small and positive) and its float64 reference on a one-unit
network worked out by hand. Its launch needs CuPy and a GPU (tests/kernels/test_gpu.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels import reference
from kernels.train import PARAMS, TrainStep
from kernels.workloads import TRAIN_SMALL


def test_parameters_and_id_with_the_default_dropout() -> None:
    w = TrainStep(16, 8, 32, 4)
    assert w.params == {"batch": 16, "d_hidden": 32, "d_in": 8, "d_out": 4, "p_drop": 0.1}
    assert w.id == "train_step[batch=16,d_hidden=32,d_in=8,d_out=4,p_drop=0.1]"


def test_seven_launches_name_each_kernel_once_and_no_transpose() -> None:
    # Two forward GEMMs of one kernel, two weight gradients of another: five names.
    assert TrainStep(16, 8, 32, 4).kernels == (
        "gemm_bias_act_fwd",
        "gemm_bwd_tn_dweight",
        "gemm_bwd_nt_dinput",
        "mse_loss_grad",
        "adamw_multi",
    )


def test_the_forward_gemms_split_k_where_their_shape_asks_for_it() -> None:
    # 256 x 4096 over K = 1024 and 256 x 1024 over K = 4096: 64 and 16 tiles, both split.
    kernels = TrainStep(*TRAIN_SMALL).kernels
    assert kernels[:2] == ("gemm_fwd_splitk_partial", "gemm_splitk_epilogue")
    assert "gemm_bias_act_fwd" not in kernels and "transpose_tiled" not in kernels


def test_outputs_are_forward_values_then_gradients_changes_and_moments() -> None:
    assert TrainStep(4, 4, 4, 4).outputs == (
        "loss", "y", "z1",
        "gw1", "gb1", "gw2", "gb2",
        "delta_w1", "delta_b1", "delta_w2", "delta_b2",
        "m_w1", "m_b1", "m_w2", "m_b2",
        "v_w1", "v_b1", "v_w2", "v_b2",
    )  # fmt: skip


def test_flops_and_bytes_as_counted_by_hand() -> None:
    w = TrainStep(4, 4, 4, 4)  # B = I = H = O = 4: every matrix 16 elements, every bias 4
    # GEMMs 2 B (2 I H + 3 H O) = 640; forward bias, GELU, dropout, bias 64; MSE 4 B O = 64;
    # backward bias sums and gZ1 64; AdamW 12 a parameter over 40 parameters = 480.
    assert w.flops == 640 + 64 + 64 + 64 + 480
    # fp32 words per launch: fwd1 68, fwd2 52, loss 48, dW2 52, dZ1 64, dW1 52 (336), and
    # AdamW's seven words a parameter.
    assert w.bytes == 4 * 336 + 7 * 4 * 40


def test_inputs_have_the_layers_shapes_and_a_warm_optimizer_state() -> None:
    w = TrainStep(8, 16, 32, 4)
    x = w.make_inputs(0)
    assert w.shapes() == {"w1": (16, 32), "b1": (32,), "w2": (32, 4), "b2": (4,)}
    assert (x["x"].shape, x["t"].shape) == ((8, 16), (8, 4))
    for p, shape in w.shapes().items():
        assert x[p].shape == x[f"m_{p}"].shape == x[f"v_{p}"].shape == shape, p
        assert not x[f"m_{p}"].any(), p  # m = 0
        assert x[f"v_{p}"].min() >= 0.5e-10 and x[f"v_{p}"].max() <= 1.5e-10, p  # v > 0
    assert all(v.dtype == np.float32 for k, v in x.items() if k != "dropout_seed")
    assert x["dropout_seed"].dtype == np.uint64 and x["dropout_seed"].shape == ()
    # Past the first steps, so that the update is a smooth function of the gradient.
    assert TrainStep.OPT is reference.ADAMW and TrainStep.OPT["step"] == 10


def one_unit(seed: int, p_drop: float = 0.0) -> dict:
    """x = 1, t = 0, w1 = 1, b1 = 0, w2 = 2, b2 = 0.5; moments 0 and 1e-10."""
    arr = np.array
    i = {"x": arr([[1.0]]), "t": arr([[0.0]]), "w1": arr([[1.0]]), "b1": arr([0.0]),
         "w2": arr([[2.0]]), "b2": arr([0.5]), "dropout_seed": np.uint64(seed)}  # fmt: skip
    for p in PARAMS:
        i[f"m_{p}"] = np.zeros_like(i[p])
        i[f"v_{p}"] = np.full_like(i[p], 1e-10)
    return TrainStep(1, 1, 1, 1, p_drop).reference(i)


def test_the_reference_step_of_a_one_unit_network_worked_out_by_hand() -> None:
    c, a = math.sqrt(2 / math.pi), 0.044715
    th = math.tanh(c * (1 + a))
    d = 0.5 * (1 + th)  # GELU(1), the tanh approximation
    gelu_slope = 0.5 * (1 + th) + 0.5 * (1 - th * th) * c * (1 + 3 * a)
    y = 2 * d + 0.5
    gy = 2 * y  # d mean((y - t)^2) / dy over one element
    gz1 = gy * 2 * gelu_slope  # back through w2 = 2 and GELU at z1 = 1
    out = one_unit(seed=0)
    assert d == pytest.approx(0.841192, rel=1e-6)
    assert out["z1"][0, 0] == 1.0
    assert out["y"][0, 0] == pytest.approx(y, rel=1e-14)
    assert out["loss"].shape == (1,) and out["loss"][0] == pytest.approx(y * y, rel=1e-14)
    expected = {"gw2": d * gy, "gb2": gy, "gw1": gz1, "gb1": gz1}
    for name, value in expected.items():
        assert out[name].ravel()[0] == pytest.approx(value, rel=1e-12), name
    # The moments after one AdamW step from m = 0: (1 - beta1) g.
    assert out["m_w2"][0, 0] == pytest.approx(0.1 * d * gy, rel=1e-12)
    assert all(out[f"delta_{p}"].ravel()[0] < 0 for p in PARAMS)  # every gradient is positive


def test_dropout_in_the_reference_follows_the_seed_only_when_p_is_above_zero() -> None:
    assert one_unit(seed=1)["y"] == one_unit(seed=2)["y"]
    w = TrainStep(8, 8, 64, 8, p_drop=0.5)
    base = {k: v.astype(np.float64) if v.dtype == np.float32 else v
            for k, v in w.make_inputs(0).items()}  # fmt: skip
    other = {**base, "dropout_seed": np.uint64(int(base["dropout_seed"]) + 1)}
    first, second = w.reference(base), w.reference(other)
    np.testing.assert_array_equal(first["z1"], second["z1"])  # before the dropout
    assert not np.array_equal(first["y"], second["y"])

"""The float64 references against finite differences and closed forms (CPU only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels import reference as ref


def central_diff(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("name", ref.ACTIVATIONS)
def test_act_grad_matches_finite_differences(name):
    z = np.random.default_rng(0).standard_normal(1000) * 3
    z = z[np.abs(z) > 1e-3]  # keep away from ReLU's kink
    numeric = central_diff(lambda v: ref.act(v, name), z)
    np.testing.assert_allclose(ref.act_grad(z, name), numeric, rtol=1e-6, atol=1e-8)


def test_gelu_is_the_tanh_approximation():
    z = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    c = math.sqrt(2 / math.pi)
    expected = [0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v**3))) for v in z]
    np.testing.assert_allclose(ref.act(z, "gelu"), expected, rtol=1e-15)
    # close to the exact (erf) GELU, but not equal to it
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in z]
    np.testing.assert_allclose(ref.act(z, "gelu"), exact, atol=1e-3)
    assert not np.allclose(ref.act(z, "gelu"), exact, atol=1e-6, rtol=0)


def test_unknown_activation():
    with pytest.raises(ValueError, match="unknown activation"):
        ref.act(np.zeros(2), "swish")


@pytest.mark.parametrize("name", ["relu", "gelu", "sigmoid", "tanh", "leaky_relu", "none"])
def test_gemm_bwd_is_the_gradient_of_the_forward(name):
    rng = np.random.default_rng(1)
    m, n, k = 5, 4, 3
    a, b, bias = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal(n)
    w = rng.standard_normal((m, n))  # loss = sum(w * Y)

    def loss(a_, b_, bias_):
        return float((w * ref.gemm_fwd(a_, b_, bias_, name)["y"]).sum())

    z = ref.gemm_fwd(a, b, bias, name)["z"]
    g = ref.gemm_bwd(a, b, z, w, name)
    for key, arr, fn in (
        ("ga", a, lambda x: loss(x, b, bias)),
        ("gb", b, lambda x: loss(a, x, bias)),
        ("gbias", bias, lambda x: loss(a, b, x)),
    ):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            e = np.zeros_like(arr)
            e[idx] = 1e-6
            num[idx] = (fn(arr + e) - fn(arr - e)) / 2e-6
        np.testing.assert_allclose(g[key], num, rtol=1e-5, atol=1e-7, err_msg=key)


def test_adamw_matches_a_scalar_loop():
    p, g, m, v = 0.5, -0.2, 0.01, 0.003
    opt = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.1, "step": 3}
    arrays = (np.array([x]) for x in (p, g, m, v))
    new_p, new_m, new_v = ref.adamw(*arrays, **opt)
    p1 = p - opt["lr"] * opt["weight_decay"] * p
    m1 = 0.9 * m + 0.1 * g
    v1 = 0.999 * v + 0.001 * g * g
    mhat, vhat = m1 / (1 - 0.9**3), v1 / (1 - 0.999**3)
    assert new_m[0] == pytest.approx(m1, rel=1e-15)
    assert new_v[0] == pytest.approx(v1, rel=1e-15)
    assert new_p[0] == pytest.approx(p1 - opt["lr"] * mhat / (math.sqrt(vhat) + 1e-8), rel=1e-13)


def test_mse_gradient():
    rng = np.random.default_rng(2)
    y, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    loss, gy = ref.mse(y, t)
    assert loss == pytest.approx(((y - t) ** 2).mean())
    e = np.zeros_like(y)
    e[1, 2] = 1e-6
    num = (ref.mse(y + e, t)[0] - ref.mse(y - e, t)[0]) / 2e-6
    assert gy[1, 2] == pytest.approx(num, rel=1e-6)


def test_mlp_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    b, i, h, o = 4, 3, 8, 2
    x, t = rng.standard_normal((b, i)), rng.standard_normal((b, o))
    params = {
        "w1": rng.standard_normal((i, h)),
        "b1": rng.standard_normal(h),
        "w2": rng.standard_normal((h, o)),
        "b2": rng.standard_normal(o),
    }
    state = {k: (np.zeros_like(v), np.ones_like(v)) for k, v in params.items()}
    opt = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "step": 1}

    def run(ps):
        return ref.mlp_train_step(x, t, **ps, state=state, p_drop=0.3, seed=7, opt=opt)

    out = run(params)
    assert np.count_nonzero(ref.dropout_mask((b, h), 0.3, 7) == 0) > 0  # dropout is active
    for name, arr in params.items():
        idx = (0,) * arr.ndim
        e = np.zeros_like(arr)
        e[idx] = 1e-6
        plus = run({**params, name: arr + e})["loss"][0]
        minus = run({**params, name: arr - e})["loss"][0]
        assert out[f"g{name}"][idx] == pytest.approx((plus - minus) / 2e-6, rel=1e-5, abs=1e-9)


def test_dropout_mask_scale_and_rate():
    mask = ref.dropout_mask((1000, 100), 0.25, seed=11)
    assert set(np.unique(mask)) == {0.0, 1 / 0.75}
    assert abs((mask == 0).mean() - 0.25) < 0.01

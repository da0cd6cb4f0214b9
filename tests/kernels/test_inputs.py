"""Input draws (CPU only): the host draws are the check's inputs, unchanged; the device draws
(timing) give the same keys, shapes, dtypes and distributions. CuPy's side is stood in for by a
NumPy-backed module with CuPy's RandomState interface; the real one is in test_gpu.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kernels.gemm import CublasGemm, GemmBwd, GemmFwd, GemmFwdTF32
from kernels.memory import AdamW, Dropout, Transpose
from kernels.train import TrainStep
from kernels.workload import DeviceDraws, HostDraws, Workload, draws
from kernels.workloads import all_workloads

SMALL = [
    GemmFwd(32, 64, 16, "relu"),
    GemmBwd(32, 64, 16, "gelu"),
    GemmFwdTF32(256, 256, 256, "gelu"),
    CublasGemm(256, 256, 256),
    AdamW((1001, 64, 4099)),
    Dropout(4099, 0.1),
    Transpose(33, 70),
    TrainStep(32, 64, 128, 16),
]


def old_inputs(w: Workload, seed: int) -> dict[str, np.ndarray]:
    """The host inputs as every earlier version of the suite drew them (verbatim)."""
    rng = np.random.default_rng(seed)
    f32 = np.float32
    if isinstance(w, (GemmFwd, GemmBwd, CublasGemm)):
        m, n, k = w.m, w.n, w.k
        out = {
            "a": rng.standard_normal((m, k), dtype=f32),
            "b": rng.standard_normal((k, n), dtype=f32) * f32(1.0 / np.sqrt(k)),
        }
        if isinstance(w, GemmBwd):
            out["z"] = rng.standard_normal((m, n), dtype=f32)
            out["gy"] = rng.standard_normal((m, n), dtype=f32)
        else:
            out["bias"] = rng.standard_normal(n, dtype=f32) * f32(0.1)
        if isinstance(w, CublasGemm):
            del out["bias"]
        return out
    if isinstance(w, AdamW):
        x = {}
        for i, n in enumerate(w.sizes):
            x[f"p{i}"] = rng.standard_normal(n, dtype=f32) * f32(0.05)
            x[f"g{i}"] = rng.standard_normal(n, dtype=f32) * f32(0.01)
            x[f"m{i}"] = rng.standard_normal(n, dtype=f32) * f32(0.001)
            x[f"v{i}"] = rng.uniform(0.5e-6, 1.5e-6, size=n).astype(f32)
        return x
    if isinstance(w, Dropout):
        return {
            "x": rng.standard_normal(w.n, dtype=np.float32),
            "seed": np.array(rng.integers(0, 2**63), dtype=np.uint64),
        }
    if isinstance(w, Transpose):
        return {"x": rng.standard_normal((w.rows, w.cols), dtype=np.float32)}
    b, i, h, o = w.dims
    x = {
        "x": rng.standard_normal((b, i), dtype=f32),
        "t": rng.standard_normal((b, o), dtype=f32),
        "w1": rng.standard_normal((i, h), dtype=f32) * f32(1 / np.sqrt(i)),
        "b1": rng.standard_normal(h, dtype=f32) * f32(0.1),
        "w2": rng.standard_normal((h, o), dtype=f32) * f32(1 / np.sqrt(h)),
        "b2": rng.standard_normal(o, dtype=f32) * f32(0.1),
    }
    for p, shape in w.shapes().items():
        x[f"m_{p}"] = np.zeros(shape, dtype=f32)
        x[f"v_{p}"] = rng.uniform(0.5e-10, 1.5e-10, size=shape).astype(f32)
    x["dropout_seed"] = np.array(rng.integers(0, 2**63), dtype=np.uint64)
    return x


class _FakeRandomState:
    """CuPy's RandomState interface (standard_normal/uniform with a dtype), NumPy underneath."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed + 12345)

    def standard_normal(self, size=None, dtype=float):
        return self.rng.standard_normal(size).astype(dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        dtype = np.dtype(dtype)
        return dtype.type(low) + self.rng.random(size).astype(dtype) * dtype.type(high - low)


FAKE_CUPY = SimpleNamespace(
    float32=np.float32, zeros=np.zeros, random=SimpleNamespace(RandomState=_FakeRandomState)
)


@pytest.mark.parametrize("w", SMALL, ids=lambda w: w.id)
@pytest.mark.parametrize("seed", [0, 2])
def test_host_draws_are_the_inputs_of_every_earlier_version(w: Workload, seed: int) -> None:
    new, old = w.make_inputs(seed), old_inputs(w, seed)
    assert list(new) == list(old)
    for k in old:
        assert new[k].dtype == old[k].dtype and new[k].shape == old[k].shape, k
        assert new[k].tobytes() == old[k].tobytes(), k


@pytest.mark.parametrize("w", SMALL, ids=lambda w: w.id)
def test_device_draws_have_the_host_keys_shapes_and_dtypes(w: Workload) -> None:
    host, dev = w.make_inputs(0), w.make_inputs(0, FAKE_CUPY)
    assert list(dev) == list(host)
    for k, v in host.items():
        assert dev[k].shape == v.shape and dev[k].dtype == v.dtype, k
        if v.dtype == np.uint64:  # scalar seeds stay host NumPy scalars, in [0, 2^63)
            assert isinstance(dev[k], np.ndarray) and 0 <= int(dev[k]) < 2**63


def _moments(x: np.ndarray) -> tuple[float, float]:
    x = x.astype(np.float64)
    return float(x.mean()), float(x.std())


def test_device_draws_have_the_host_distributions() -> None:
    w = TrainStep(64, 256, 512, 128)
    host, dev = w.make_inputs(0), w.make_inputs(0, FAKE_CUPY)
    for k, v in host.items():
        if v.dtype != np.float32:
            continue
        if k.startswith("m_"):
            assert not dev[k].any() and not v.any(), k
            continue
        (hm, hs), (dm, ds) = _moments(v), _moments(dev[k])
        assert ds == pytest.approx(hs, rel=0.1), k
        assert abs(dm - hm) <= 6 * hs / np.sqrt(v.size), k  # two sample means apart
        if k.startswith("v_"):  # U(0.5e-10, 1.5e-10)
            assert dev[k].min() >= 0.5e-10 * 0.999 and dev[k].max() <= 1.5e-10 * 1.001
    gemm = GemmFwd(256, 256, 1024, "gelu")
    dev = gemm.make_inputs(1, FAKE_CUPY)
    assert _moments(dev["a"])[1] == pytest.approx(1.0, rel=0.02)
    assert _moments(dev["b"])[1] == pytest.approx(1 / 32, rel=0.02)  # N(0, 1/K)
    assert _moments(dev["bias"])[1] == pytest.approx(0.1, rel=0.2)


def test_device_scalar_seeds_are_deterministic_and_differ_by_seed() -> None:
    d = Dropout(4099, 0.1)
    a, b, c = (d.make_inputs(s, FAKE_CUPY)["seed"] for s in (0, 0, 1))
    assert a.dtype == np.uint64 and a.shape == ()
    assert int(a) == int(b) and int(a) != int(c)


def test_draws_pick_host_for_numpy_and_device_otherwise() -> None:
    assert isinstance(draws(0), HostDraws)
    assert isinstance(draws(0, FAKE_CUPY), DeviceDraws)


def test_prepare_refuses_an_unknown_input_place_before_touching_the_gpu() -> None:
    with pytest.raises(ValueError, match="inputs must be one of"):
        all_workloads()[0].prepare(0, inputs="gpu")

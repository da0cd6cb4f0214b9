"""kernels/workload.py on the CPU: a workload's id (its name and parameters sorted by key, lists
joined by "x"), its JSON-able parameters and description, its tolerance per precision, when its
reference moves to the GPU (strictly above 2e10 FLOPs or 1e8 bytes), the poison NaN, and the input
draws: the host draws are the check's inputs, unchanged; the device draws (timing) give the same
keys, shapes, dtypes and distributions. CuPy's side is stood in for by a NumPy-backed module with
CuPy's RandomState interface; the real one is in test_gpu.py; ``Instance`` needs CuPy (there)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from kernels.gemm import CublasGemm, GemmBwd, GemmFwd, GemmFwdTF32
from kernels.memory import AdamW, Dropout, Transpose
from kernels.train import TrainStep
from kernels.workload import (
    POISON_BITS,
    REFERENCE_ON_DEVICE_BYTES,
    REFERENCE_ON_DEVICE_FLOPS,
    TOLERANCES,
    DeviceDraws,
    HostDraws,
    Workload,
    draws,
    format_value,
)
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


# --- the description: id, parameters, tolerance, where the reference runs --------------------


def test_an_id_is_the_name_and_the_parameters_sorted_by_key() -> None:
    w = TrainStep(16, 8, 32, 4, 0.25)
    assert list(w.params) == ["batch", "d_hidden", "d_in", "d_out", "p_drop"]
    assert w.id == "train_step[batch=16,d_hidden=32,d_in=8,d_out=4,p_drop=0.25]"
    # A list parameter is written joined by "x", as a shape is.
    assert AdamW((1001, 64, 4099)).id == "adamw[sizes=1001x64x4099]"
    assert repr(Transpose(33, 70)) == "<Workload transpose[cols=70,rows=33]>"


def test_nested_lists_and_tuples_are_flattened_into_one_x_joined_value() -> None:
    assert format_value([2, (3, [4, 5])]) == "2x3x4x5"
    assert format_value(0.1) == "0.1"
    assert format_value("gelu") == "gelu"


def test_parameters_that_json_cannot_write_are_refused_at_construction() -> None:
    # A NumPy integer is no JSON number: the description a runner sends would not serialize.
    with pytest.raises(TypeError):
        Transpose(np.int64(33), 70)


def test_the_tolerance_is_the_precisions_bound() -> None:
    assert TOLERANCES == {"fp32": 1e-4, "tf32": 2e-3}
    assert GemmFwd(32, 64, 16, "gelu").tolerance == 1e-4
    assert GemmFwdTF32(32, 64, 16, "gelu").tolerance == 2e-3


def test_the_reference_moves_to_the_gpu_strictly_above_the_byte_bound() -> None:
    # A dropout of n elements moves 8 n bytes (read x, write y) for n FLOPs.
    at = Dropout(12_500_000, 0.1)
    above = Dropout(12_500_001, 0.1)
    assert at.bytes == REFERENCE_ON_DEVICE_BYTES == 1e8
    assert not at.reference_on_device
    assert above.reference_on_device and above.flops < REFERENCE_ON_DEVICE_FLOPS


def test_the_reference_moves_to_the_gpu_strictly_above_the_flop_bound() -> None:
    # cuBLAS's 2 M N K FLOPs; 2000 x 2000 x 2500 is 2e10 exactly, its bytes far under 1e8.
    at, above = CublasGemm(2000, 2000, 2500), CublasGemm(2000, 2000, 2504)
    assert at.flops == REFERENCE_ON_DEVICE_FLOPS == 2e10
    assert not at.reference_on_device
    assert above.reference_on_device and above.bytes < REFERENCE_ON_DEVICE_BYTES


def test_the_description_is_json_with_every_field() -> None:
    w = Dropout(4099, 0.1, tags=("memory", "smoke"))
    assert json.loads(json.dumps(w.to_dict())) == {
        "name": "dropout",
        "id": "dropout[n=4099,p=0.1]",
        "params": {"n": 4099, "p": 0.1},
        "kernels": ["dropout_fwd"],
        "precision": "fp32",
        "tolerance": 1e-4,
        "flops": 4099,
        "bytes": 8 * 4099,
        "tags": ["memory", "smoke"],
        # CUDA events unless the suite's list says otherwise (kernels.workloads sets it).
        "timing_method": "cuda_events",
    }


def test_the_poison_is_a_quiet_nan_other_than_the_one_gpu_arithmetic_makes() -> None:
    value = np.array(POISON_BITS, dtype=np.uint32).view(np.float32)
    assert np.isnan(value)
    assert POISON_BITS & (1 << 22)  # the quiet bit: reading it traps nowhere
    # CUDA arithmetic makes 0x7FFFFFFF, NumPy 0x7FC00000: a 0/0 must not read as "unwritten".
    assert POISON_BITS not in (0x7FFFFFFF, 0x7FC00000)


# --- the host draws ---------------------------------------------------------------------------


def test_host_draws_are_float32_and_scaled_after_the_draw() -> None:
    a, b = HostDraws(7), HostDraws(7)
    plain, scaled = a.normal((3, 4)), b.normal((3, 4), 0.5)
    assert plain.dtype == scaled.dtype == np.float32 and plain.shape == (3, 4)
    # The same N(0, 1) draw times the scale in float32: a scale never changes which values.
    np.testing.assert_array_equal(scaled, plain * np.float32(0.5))
    u = HostDraws(7).uniform(1000, 2.0, 3.0)
    assert u.dtype == np.float32 and u.min() >= 2.0 and u.max() <= 3.0
    zeros = HostDraws(7).zeros((2, 2))
    assert zeros.dtype == np.float32 and not zeros.any()


def test_a_host_scalar_seed_is_a_uint64_below_two_to_the_63() -> None:
    seeds = [HostDraws(s).seed63() for s in range(20)]
    assert all(s.dtype == np.uint64 and s.shape == () and int(s) < 2**63 for s in seeds)
    assert len({int(s) for s in seeds}) == 20


def test_device_scalar_seeds_come_from_a_stream_of_their_own() -> None:
    # Not the host's seed for the same workload seed: the device draws are other values.
    host = Dropout(4099, 0.1).make_inputs(3)["seed"]
    device = Dropout(4099, 0.1).make_inputs(3, FAKE_CUPY)["seed"]
    assert int(host) != int(device)

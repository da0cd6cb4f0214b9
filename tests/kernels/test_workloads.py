"""Workload listing, parameters, ids, references at small shapes (CPU only, no CuPy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import build
from kernels.gemm import GemmBwd, GemmFwd
from kernels.train import TrainStep
from kernels.workload import TOLERANCES
from kernels.workloads import GEMM_SHAPES, all_workloads, get, select

ROOT = Path(__file__).resolve().parents[2]


def upcast(inputs):
    return {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}


def test_ids_are_unique_and_stable():
    ids = [w.id for w in all_workloads()]
    assert len(ids) == len(set(ids))
    assert "gemm_fwd[act=gelu,k=1024,m=1024,n=1024]" in ids
    assert get("gemm_bwd[act=relu,k=16,m=32,n=64]").tags == ("gemm", "backward", "smoke")
    with pytest.raises(KeyError):
        get("gemm_fwd[nope]")


def test_the_fixed_set_is_there():
    ids = {w.id for w in all_workloads()}
    for m, n, k in GEMM_SHAPES:
        for act in ("relu", "gelu"):
            assert f"gemm_fwd[act={act},k={k},m={m},n={n}]" in ids
            assert f"gemm_bwd[act={act},k={k},m={m},n={n}]" in ids
        assert f"cublas_gemm[k={k},m={m},n={n}]" in ids
    train = [w for w in all_workloads() if w.name == "train_step"]
    assert [w.params["batch"] for w in train] == [256, 2048]
    assert train[0].params == {"batch": 256, "d_hidden": 4096, "d_in": 1024, "d_out": 1024,
                               "p_drop": 0.1}  # fmt: skip
    assert (8192, 1024, 4096) in GEMM_SHAPES
    assert select(("baseline",)) and all(w.name == "cublas_gemm" for w in select(("baseline",)))


def test_descriptions_are_json_and_complete():
    for w in all_workloads():
        d = json.loads(json.dumps(w.to_dict()))
        assert d["id"] == w.id
        assert d["precision"] in TOLERANCES and d["tolerance"] == TOLERANCES[d["precision"]]
        assert d["bytes"] > 0 and d["flops"] >= 0
        assert w.tags


def test_kernel_names_exist_in_the_sources():
    declared = {n for src in build.sources() for n in build.kernel_names(src)}
    for w in all_workloads():
        assert set(w.kernels) <= declared, w.id
    assert "transpose_tiled" in declared
    train = TrainStep(8, 8, 8, 8)
    assert "transpose_tiled" not in train.kernels


@pytest.mark.parametrize("w", select(("smoke",)), ids=lambda w: w.id)
def test_smoke_references_on_cpu(w):
    inputs = w.make_inputs(0)
    assert all(v.dtype in (np.float32, np.uint64) for v in inputs.values())
    out = w.reference(upcast(inputs))
    assert set(out) == set(w.outputs)
    for v in out.values():
        assert v.dtype == np.float64 and np.all(np.isfinite(v))
    assert not w.reference_on_device


def test_inputs_are_seeded():
    w = GemmFwd(8, 8, 8, "relu")
    a, b, c = w.make_inputs(1), w.make_inputs(1), w.make_inputs(2)
    np.testing.assert_array_equal(a["a"], b["a"])
    assert not np.array_equal(a["a"], c["a"])


def test_big_shapes_use_the_device_reference():
    assert get("gemm_fwd[act=relu,k=4096,m=4096,n=4096]").reference_on_device
    assert get("gemm_fwd[act=relu,k=1024,m=1024,n=1024]").reference_on_device is False
    assert [w.reference_on_device for w in select(("training",))] == [True, True]


def test_gemm_references_agree():
    w_fwd, w_bwd = GemmFwd(8, 12, 4, "gelu"), GemmBwd(8, 12, 4, "relu")
    i = upcast(w_fwd.make_inputs(3))
    y = w_fwd.reference(i)
    np.testing.assert_allclose(y["z"], i["a"] @ i["b"] + i["bias"])
    j = upcast(w_bwd.make_inputs(3))
    g = w_bwd.reference(j)
    gz = j["gy"] * (j["z"] > 0)
    np.testing.assert_allclose(g["gbias"], gz.sum(0))
    np.testing.assert_allclose(g["ga"], gz @ j["b"].T)


def test_train_step_reference_small():
    w = TrainStep(16, 8, 32, 8)
    out = w.reference(upcast(w.make_inputs(0)))
    assert set(out) == set(w.outputs)
    assert out["loss"].shape == (1,) and out["loss"][0] > 0
    assert np.abs(out["delta_w1"]).max() > 0


def test_unknown_activation_rejected():
    with pytest.raises(ValueError):
        GemmFwd(4, 4, 4, "swish")


def test_import_and_listing_need_no_cupy():
    code = (
        "import sys; sys.modules['cupy'] = None\n"
        "import kernels, numpy as np\n"
        "from kernels.workloads import all_workloads, select\n"
        "ws = all_workloads(); assert ws\n"
        "w = select(('smoke',))[0]\n"
        "i = {k: v.astype(np.float64) for k, v in w.make_inputs(0).items()}\n"
        "w.reference(i)\n"
        "from kernels.device import GPUUnavailable, gpu_available\n"
        "assert not gpu_available()\n"
        "try:\n    w.prepare(0)\nexcept GPUUnavailable:\n    pass\n"
        "else:\n    raise SystemExit('prepare should need CuPy')\n"
        "assert 'cupy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr

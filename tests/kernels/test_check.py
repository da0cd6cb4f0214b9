"""The comparison behind ``kernels.check`` (CPU only)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kernels.check import compare_outputs, rel_l2, summarize
from kernels.workload import POISON_BITS


def verdict(out, ref, tol=1e-4):
    return summarize(compare_outputs({"y": out}, {"y": ref}), tol, "fp32")


def test_exact_output_passes():
    ref = np.arange(1.0, 7.0).reshape(2, 3)
    v = verdict(ref.astype(np.float32), ref)
    assert v == {
        "passed": True,
        "error_norm": 0.0,
        "tolerance": 1e-4,
        "norm": "rel_l2",
        "unwritten": 0,
        "precision": "fp32",
    }
    json.dumps(v)


def test_error_is_relative_l2():
    ref = np.array([3.0, 4.0])
    assert rel_l2(np.array([3.0, 4.5], dtype=np.float32), ref) == pytest.approx(0.1)
    assert not verdict(np.array([3.0, 4.5], dtype=np.float32), ref)["passed"]


def test_unwritten_elements_are_counted_and_fail():
    ref = np.ones(10)
    out = np.ones(10, dtype=np.float32)
    out.view(np.uint32)[[2, 7]] = POISON_BITS
    v = verdict(out, ref)
    assert v["unwritten"] == 2
    assert not v["passed"]
    assert v["error_norm"] == math.inf
    json.dumps(v)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_never_passes(bad):
    out = np.ones(4, dtype=np.float32)
    out[1] = bad
    v = verdict(out, np.ones(4), tol=math.inf)
    assert not v["passed"]
    assert v["unwritten"] == 0


def test_worst_output_decides():
    ref = {"a": np.ones(4), "b": np.ones(4)}
    out = {"a": np.ones(4, dtype=np.float32), "b": np.full(4, 1.01, dtype=np.float32)}
    v = summarize(compare_outputs(out, ref), 1e-4, "fp32")
    assert v["error_norm"] == pytest.approx(0.01, rel=1e-5)
    assert not v["passed"]


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        compare_outputs({"y": np.ones(3, dtype=np.float32)}, {"y": np.ones(4)})

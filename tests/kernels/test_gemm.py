"""kernels/gemm.py on the CPU: the GEMM workloads' declarations (names, parameters, kernels by
shape and precision, outputs, FLOP and byte counts worked out by hand from kernels/counts.py's
docstrings), their inputs (keys, shapes, float32, A.B of unit variance, the baseline's operands
the forward's) and their float64 references against products worked out by hand. Their launches
need CuPy and a GPU (tests/kernels/test_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

from kernels.gemm import CublasGemm, GemmBwd, GemmFwd, GemmFwdTF32, gemm_inputs

A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[1.0, -1.0], [0.0, 1.0]])  # A.B = [[1, 1], [3, 1]]


def test_forward_inputs_are_a_b_and_a_bias_all_float32() -> None:
    x = gemm_inputs(32, 64, 16, seed=0, backward=False)
    assert list(x) == ["a", "b", "bias"]
    assert [v.shape for v in x.values()] == [(32, 16), (16, 64), (64,)]
    assert all(v.dtype == np.float32 for v in x.values())


def test_backward_inputs_carry_the_saved_z_and_the_incoming_gradient() -> None:
    x = gemm_inputs(32, 64, 16, seed=0, backward=True)
    assert list(x) == ["a", "b", "z", "gy"]
    assert [v.shape for v in x.values()] == [(32, 16), (16, 64), (32, 64), (32, 64)]


def test_b_is_scaled_by_one_over_root_k_so_the_product_has_unit_variance() -> None:
    x = gemm_inputs(64, 64, 1024, seed=1, backward=False)
    product = x["a"].astype(np.float64) @ x["b"].astype(np.float64)
    assert product.std() == pytest.approx(1.0, rel=0.05)  # 4096 values of N(0, 1)
    assert x["bias"].std() == pytest.approx(0.1, rel=0.3)  # N(0, 0.01): 64 values


def test_inputs_are_the_seeds_and_only_the_seeds() -> None:
    a, b, c = (gemm_inputs(8, 8, 8, s, backward=True)["gy"] for s in (4, 4, 5))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_the_baselines_operands_are_the_forwards_without_the_bias() -> None:
    fwd, blas = GemmFwd(32, 64, 16, "relu").make_inputs(2), CublasGemm(32, 64, 16).make_inputs(2)
    assert list(blas) == ["a", "b"]
    assert blas["a"].tobytes() == fwd["a"].tobytes() and blas["b"].tobytes() == fwd["b"].tobytes()


def test_the_forward_runs_one_kernel_where_its_tiles_fill_the_gpu() -> None:
    w = GemmFwd(32, 64, 16, "gelu")
    assert (w.name, w.id) == ("gemm_fwd", "gemm_fwd[act=gelu,k=16,m=32,n=64]")
    assert w.kernels == ("gemm_bias_act_fwd",)
    assert w.outputs == ("y", "z") and w.precision == "fp32"


def test_a_small_grid_with_a_long_k_runs_the_split_k_pair_primary_first() -> None:
    # 2 x 2 tiles of 128 and K = 1024: K is split (kernels.ops.gemm_fwd_splits).
    assert GemmFwd(256, 256, 1024, "relu").kernels == (
        "gemm_fwd_splitk_partial",
        "gemm_splitk_epilogue",
    )


def test_the_tf32_forward_is_one_tensor_core_kernel_at_every_shape() -> None:
    for shape in ((32, 64, 16), (256, 256, 1024)):
        w = GemmFwdTF32(*shape, "gelu")
        assert w.kernels == ("gemm_tf32_bias_act_fwd",), shape
    assert (w.name, w.precision, w.tolerance) == ("gemm_fwd_tf32", "tf32", 2e-3)


def test_the_backward_and_the_baseline_kernels_are_fixed() -> None:
    assert GemmBwd(256, 256, 1024, "relu").kernels == ("gemm_bwd_tn_dweight", "gemm_bwd_nt_dinput")
    assert GemmBwd(8, 8, 8, "relu").outputs == ("ga", "gb", "gbias")
    # cuBLAS picks its own kernels: none are declared.
    assert CublasGemm(8, 8, 8).kernels == () and CublasGemm(8, 8, 8).outputs == ("c",)


def test_flops_and_bytes_as_counted_by_hand() -> None:
    m, n, k = 2, 3, 4  # A 8, B 12, bias 3, an M x N output 6 elements
    fwd = GemmFwd(m, n, k, "relu")
    # 2 M N K for the product, one add and one activation per output; Z saved beside Y.
    assert (fwd.flops, fwd.bytes) == (48 + 12, 4 * (8 + 12 + 3 + 6 + 6))
    bwd = GemmBwd(m, n, k, "relu")
    # Two products and gZ = gY * act'(Z), gBias; reads A B gY Z, writes gA gB gBias, gZ twice.
    assert (bwd.flops, bwd.bytes) == (96 + 12, 4 * ((8 + 12 + 6 + 6) + (8 + 12 + 3) + 2 * 6))
    blas = CublasGemm(m, n, k)
    assert (blas.flops, blas.bytes) == (48, 4 * (8 + 12 + 6))


@pytest.mark.parametrize("cls", [GemmFwd, GemmBwd])
def test_an_unknown_activation_is_refused(cls: type) -> None:
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        cls(8, 8, 8, "swish")


def test_the_forward_reference_is_the_activation_of_the_product_plus_bias() -> None:
    out = GemmFwd(2, 2, 2, "relu").reference({"a": A, "b": B, "bias": np.array([0.5, -4.0])})
    np.testing.assert_array_equal(out["z"], [[1.5, -3.0], [3.5, -3.0]])
    np.testing.assert_array_equal(out["y"], [[1.5, 0.0], [3.5, 0.0]])
    assert out["y"].dtype == np.float64


def test_the_backward_reference_masks_the_gradient_by_the_activations_slope() -> None:
    z = np.array([[1.0, -1.0], [-2.0, 3.0]])
    gy = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = GemmBwd(2, 2, 2, "relu").reference({"a": A, "b": B, "z": z, "gy": gy})
    # gZ = gY where Z > 0: [[1, 0], [0, 4]]; gA = gZ.B^T, gB = A^T.gZ, gBias = column sums.
    np.testing.assert_array_equal(out["ga"], [[1.0, 0.0], [-4.0, 4.0]])
    np.testing.assert_array_equal(out["gb"], [[1.0, 12.0], [2.0, 16.0]])
    np.testing.assert_array_equal(out["gbias"], [1.0, 4.0])


def test_the_baselines_reference_is_the_plain_product() -> None:
    out = CublasGemm(2, 2, 2).reference({"a": A, "b": B})
    np.testing.assert_array_equal(out["c"], [[1.0, 1.0], [3.0, 1.0]])

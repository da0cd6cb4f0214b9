"""kernelwatch's default GPU kernel suite: CUDA sources, workloads, float64 references, counts.

Importing ``kernels`` (and listing workloads, computing references and counts) needs only the
standard library and NumPy; CuPy is imported inside the functions that touch the GPU.

Kernels (``kernels/cuda/*.cu``; fp32; ``extern "C"`` names)
    ``gemm_bias_act_fwd``    Y = dropout(act(A.B + bias)), pre-activation Z optionally saved;
                             act in none, relu, leaky_relu, sigmoid, tanh, gelu (tanh approx.)
    ``gemm_fwd_splitk_partial`` + ``gemm_splitk_epilogue``: the same with K split, chosen by
                             shape (``ops.gemm_fwd_splits``) when 128x128 tiles cannot fill the GPU
    ``gemm_tf32_bias_act_fwd`` the same on tensor cores (TF32 mma.sync), precision "tf32"
    ``gemm_bwd_tn_dweight``  gW = A^T.gZ, gZ = gY * act'(Z) fused in its tile loads; also writes
                             gZ and gBias = column sums of gZ
    ``gemm_bwd_nt_dinput``   gA = gZ.B^T (B read transposed), optional dropout/act' epilogue
    ``adamw_multi``          AdamW over a list of tensors in one launch (float4)
    ``dropout_fwd``          dropout with an in-kernel Philox4x32-10 mask
    ``mse_loss_grad``        MSE loss and its gradient, deterministic reduction
    ``transpose_tiled``      shared-memory tiled transpose (the training step never launches it)

Build (``kernels.build``)
    ``build(build_dir, arch=None, *, nvcc=None, defines=(), only=None) -> BuildResult``:
    nvcc ``-cubin -O3 -Xptxas -v -arch=sm_XX`` per source; ``BuildResult.kernels[name]`` is a
    ``KernelBuild`` (registers, shared_bytes, stack_bytes, spill_store_bytes, spill_load_bytes,
    compile_s, ptxas_ms); ``BuildResult.to_dict()`` is JSON-able. ``build_nvrtc()`` is the
    fallback without nvcc (CuPy's NVRTC, needs the GPU). ``kernels.ptxas.parse_ptxas(text)`` is
    the pure parser of ptxas's report. ``kernels.device.KernelLibrary(result)`` loads a build
    (``cupy.RawModule(path=cubin)``); ``kernels.device.default_library()`` builds one on first use.

Workloads (``kernels.workloads``)
    ``all_workloads() -> list[Workload]``, ``get(id)``, ``select(tags, match)``. A ``Workload``
    has ``name``, ``params`` (JSON-able dict), ``id`` (``name[k=v,...]``, keys sorted),
    ``kernels`` (CUDA kernel names of the timed launch, primary first; empty for the cuBLAS
    baseline), ``precision``, ``tolerance``, ``flops``, ``bytes``, ``tags``, ``outputs``,
    ``to_dict()``, and:

    - ``make_inputs(seed, xp=numpy) -> dict``: host inputs from a seeded NumPy RNG
      (``kernels.workload.HostDraws``); with ``xp`` = CuPy the same shapes, dtypes and
      distributions drawn on the GPU (``DeviceDraws``, cuRAND; other values)
    - ``reference(inputs, xp=numpy) -> dict``: the float64 outputs (plain float64 maths with
      ``xp`` = NumPy, or CuPy for the big shapes: ``reference_on_device`` says which ``check``
      uses; for those ``check`` draws the inputs on the GPU too)
    - ``prepare(seed=0, library=None, *, inputs="host") -> Instance``: inputs uploaded (or,
      with ``inputs="device"``, drawn on the GPU: what the runner's timing processes use, since
      no kernel's time depends on the values), outputs allocated

    An ``Instance`` has ``launch()`` (asynchronous on the current stream, no synchronize: the
    thing to time), ``poison()`` (fill outputs and scratch with a NaN of a payload no kernel
    writes), ``fetch(xp=numpy) -> dict`` (outputs), ``reference(xp=numpy) -> dict``
    (float64), ``reset()`` (restore the state a launch updates in place, e.g. parameters) and
    ``close()``.

Correctness (``kernels.check``)
    ``check(workload, seed=0, library=None) -> {"passed": bool, "error_norm": float,
    "tolerance": float, "norm": "rel_l2", "unwritten": int, "precision": str}``: poison, launch
    once, relative L2 error of the worst output against the float64 reference; NaN or an
    unwritten element never passes (``error_norm`` is ``inf`` when an output is not finite).
    ``run_check`` also returns the per-output detail.

Counts (``kernels.counts``) are pure FLOP and byte formulas; timing helpers (CUDA events, L2
flush, ``TracedLibrary`` for a per-kernel breakdown of one launch) are in ``kernels.timing``; the
launch wrappers (shape checks, grids, argument types) in ``kernels.ops``.
"""

from kernels.check import check
from kernels.workload import TOLERANCES, Instance, Workload
from kernels.workloads import all_workloads

__all__ = ["TOLERANCES", "Instance", "Workload", "all_workloads", "check"]

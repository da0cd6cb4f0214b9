"""The suite's fixed set of workloads."""

from __future__ import annotations

from kernels.gemm import CublasGemm, GemmBwd, GemmFwd, GemmFwdTF32
from kernels.memory import AdamW, Dropout, Transpose
from kernels.train import TrainStep
from kernels.workload import Workload

SMOKE_SHAPE = (32, 64, 16)
GEMM_SHAPES = (
    SMOKE_SHAPE,
    (256, 256, 256),
    (1024, 1024, 1024),
    (4096, 4096, 4096),
    (8192, 1024, 4096),
)
GEMM_ACTS = ("relu", "gelu")
TRAIN_SMALL = (256, 1024, 4096, 1024)
TRAIN_LARGE = (2048, 4096, 16384, 4096)
# Timed by CUPTI's kernel records rather than CUDA events: the smoke shapes and the 256^3
# library and TF32 GEMMs, whose launches take 4-34 us through CUDA events on an H100 (measured
# 2026-11-25; 3-4 us of that is the events' own overhead, CUPTI reads 1.5-30 us). The next
# shortest launch takes 51 us. Declared here once: a workload is timed the same way at every
# commit, whatever a measurement says.
CUPTI_TIMED = ("cublas_gemm[k=256,m=256,n=256]", "gemm_fwd_tf32[act=gelu,k=256,m=256,n=256]")


def all_workloads() -> list[Workload]:
    """Every workload of the suite, in a stable order."""
    out: list[Workload] = []
    for m, n, k in GEMM_SHAPES:
        size = ("smoke",) if (m, n, k) == SMOKE_SHAPE else ()
        for act in GEMM_ACTS:
            out.append(GemmFwd(m, n, k, act, tags=("gemm", *size)))
            out.append(GemmBwd(m, n, k, act, tags=("gemm", "backward", *size)))
        out.append(GemmFwdTF32(m, n, k, "gelu", tags=("gemm", "tf32", *size)))
        out.append(CublasGemm(m, n, k, tags=("gemm", "baseline", *size)))
    out.append(TrainStep(*TRAIN_SMALL, tags=("training",)))
    out.append(TrainStep(*TRAIN_LARGE, tags=("training", "large")))
    # The other kernels, checked and timed on their own (memory-bound).
    out.append(AdamW((1001, 64, 4099), tags=("optimizer", "memory", "smoke")))
    out.append(AdamW((4096 * 1024, 4096, 1024 * 4096, 1024), tags=("optimizer", "memory")))
    out.append(Dropout(4099, 0.1, tags=("memory", "smoke")))
    out.append(Dropout(1 << 25, 0.1, tags=("memory",)))
    out.append(Transpose(33, 70, tags=("memory", "smoke")))
    out.append(Transpose(4096, 4096, tags=("memory",)))
    for w in out:
        if "smoke" in w.tags or w.id in CUPTI_TIMED:
            w.timing_method = "cupti"
    return out


def get(workload_id: str) -> Workload:
    """The workload with this id (``KeyError`` listing the known ids otherwise)."""
    for w in all_workloads():
        if w.id == workload_id:
            return w
    raise KeyError(f"no workload {workload_id!r}; known: {[w.id for w in all_workloads()]}")


def select(tags: tuple[str, ...] = (), match: str | None = None) -> list[Workload]:
    """Workloads carrying every tag in ``tags`` whose id contains ``match``."""
    return [
        w
        for w in all_workloads()
        if all(t in w.tags for t in tags) and (match is None or match in w.id)
    ]

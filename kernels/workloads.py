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

"""Which series of a run are controls of its common offset (service.analysis.run_offset): those
whose workload's ncu captures show that nothing that determines its kernels changed between
every run of its baseline and the head (the SQL around that rule).

The runner stamps every kernel entry of a profile with a digest of what determined it (the
host, GPU and tools, the profile's configuration, the workload and its inputs, the commit's
code but native sources, and that kernel's own compiled code: runner.profile.reuse), ncu adds
the launch (grid, block, registers, shared memory: service.analysis.work.determinants). A
workload is a control when the head and each baseline run captured the same kernels with the
same determinants. Without captures (no ncu on that host, an older runner, a failed pass) a
workload is never a control: an offset is only taken out where the run proves it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.work import determinants
from service.core.sql import among
from service.models import NcuKernel, RunWorkload

_Workload = tuple[int, str, str]  # run id, workload name, params key


def _captured(session: Session, run_ids: set[int]) -> dict[_Workload, frozenset | None]:
    """(run, workload, params key) -> its kernels' (name, determinants), None where one of them
    does not say what determined it."""
    out: dict[_Workload, set | None] = defaultdict(set)
    rows = session.execute(
        select(
            RunWorkload.run_id,
            RunWorkload.name,
            RunWorkload.params_key,
            NcuKernel.kernel,
            NcuKernel.determinants,
            NcuKernel.metrics,
        )
        .join(NcuKernel, NcuKernel.run_workload_id == RunWorkload.id)
        .where(among(session, RunWorkload.run_id, run_ids))
    )
    for run_id, name, params_key, kernel, runner_key, metrics in rows:
        key = (run_id, name, params_key)
        digest = determinants(runner_key, metrics)
        kernels = out[key]
        if digest is None or kernels is None:
            out[key] = None
        else:
            kernels.add((kernel, digest))
    return {k: frozenset(v) if v is not None else None for k, v in out.items()}


def controls(
    session: Session, run_id: int, workloads: dict[int, tuple[str, str, Iterable[int]]]
) -> set[int]:
    """The keys of `workloads` (key -> workload name, params key, its baseline's run ids) whose
    kernels were captured with equal determinants in run `run_id` and every baseline run."""
    runs = {run_id} | {r for _, _, base in workloads.values() for r in base}
    captured = _captured(session, runs)
    out = set()
    for key, (name, params_key, base) in workloads.items():
        head = captured.get((run_id, name, params_key))
        base_runs = list(base)
        same = all(captured.get((r, name, params_key)) == head for r in base_runs)
        if head and base_runs and same:
            out.add(key)
    return out

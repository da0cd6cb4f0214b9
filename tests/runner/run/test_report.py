"""runner.run.report: what a workload's record puts in the result document."""

from __future__ import annotations

from runner.measure.phase import Outcome
from runner.run.report import WorkloadRecord, workload_section

INFO = {"id": "saxpy[n=4]", "name": "saxpy", "params": {"n": 4}, "kernels": ["saxpy"]}
CHECK = {"passed": True, "error_norm": 0.0, "tolerance": 1e-6, "norm": "rel_l2",
         "precision": "fp32", "unwritten": 0}  # fmt: skip


def test_a_checks_launch_signature_stays_with_the_runner_not_in_the_document() -> None:
    signature = {"kernels": [], "code": {}, "inputs": {}, "written": {}, "scalars": {},
                 "launch_code": "l"}  # fmt: skip
    record = WorkloadRecord(info=INFO, check=Outcome("ok", {**CHECK, "signature": signature}))
    assert record.signature == signature  # for the ncu pass (runner.profile.launch_key)
    section = workload_section(record)
    assert section["correctness"] == CHECK and section["status"] == "ok"
    assert WorkloadRecord(info=INFO, check=Outcome("ok", dict(CHECK))).signature is None
    assert WorkloadRecord(info=INFO).signature is None

"""The PyTorch/Triton history recorded on the H200 (benchmarks/results/torch_h200: the example
suite through the real webhook, agent and service), every run decided again by today's rules
and read back through a real `kernelwatch serve`: each injected regression is called on its
series alone, with the kernel and the cause the truth knows, and nothing else moves."""

from __future__ import annotations

from pathlib import Path

from benchmarks import history_replay, torch_gpu
from benchmarks.history_gpu import _load

RESULTS = Path(torch_gpu.__file__).parent / "results" / "torch_h200"
SOFTMAX, WIDE = "softmax[cols=1024,rows=4096]", "scale_rows[cols=8192,rows=8192]"


def test_the_recorded_torch_history_names_each_regression_its_kernel_and_cause(
    tmp_path: Path,
) -> None:
    saved = _load(RESULTS / "torch.json.gz")
    saved["truth"] = _load(RESULTS / "truth.json")
    db = tmp_path / "kernelwatch.db"
    history_replay.rejudge(RESULTS / "kernelwatch.db.gz", db, saved["commits"]).dispose()
    table = {(r["commit"], r["series"]): r for r in torch_gpu.rows(
        torch_gpu.reread(saved, db, tmp_path))}  # fmt: skip
    assert len({c for c, _ in table}) == 5  # base .. the operator's step (the budget's end)
    # The forced 16-warp config: the truth's microseconds within 0.5 us of the reported ones.
    triton = table[(2, SOFTMAX)]
    assert triton["verdict"] == "regressed" and triton["kernel"] == "softmax_kernel"
    assert abs(triton["reported_us"] - triton["truth_us"]) < 0.5, triton
    assert "shared-memory wavefronts" in triton["cause"]
    assert [c["name"] for c in triton["choices"]] == ["softmax_kernel"]
    assert "num_warps: 16" in triton["choices"][0]["head"]
    # The operator's uncoalesced access: within 5 points of the truth, the cause named.
    operator = table[(4, WIDE)]
    assert operator["verdict"] == "regressed" and operator["kernel"].startswith("scale_rows_kernel")
    assert abs(operator["reported"] - operator["truth"]) < 0.05, operator
    assert operator["cause"].startswith("uncoalesced access")
    # Nothing else is called changed: the A/A and innocent commits, and the untouched series.
    called = {key for key, r in table.items() if r["verdict"] in ("regressed", "improved")}
    assert called == {(2, SOFTMAX), (4, WIDE)}, called

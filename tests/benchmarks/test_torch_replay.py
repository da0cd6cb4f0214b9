"""The PyTorch/Triton histories recorded on the H200 (benchmarks/results/torch_h200: up to the
operator's step) and on an H100 (torch_h100: all seven commits, through the fix): the example
suite through the real webhook, agent and service, every run decided again by today's rules and
read back through a real `kernelwatch serve`. Each injected regression is called on its series
alone, with the kernel and the cause the truth knows, nothing else moves, and the fix closes
both alerts."""

from __future__ import annotations

from pathlib import Path

from benchmarks import history_replay, torch_gpu
from benchmarks.history_gpu import _load

RESULTS = Path(torch_gpu.__file__).parent / "results" / "torch_h200"
SOFTMAX, WIDE = "softmax[cols=1024,rows=4096]", "scale_rows[cols=8192,rows=8192]"


def replayed(results: Path, tmp_path: Path) -> dict[tuple[int, str], dict]:
    saved = _load(results / "torch.json.gz")
    saved["truth"] = _load(results / "truth.json")
    db = tmp_path / "kernelwatch.db"
    history_replay.rejudge(results / "kernelwatch.db.gz", db, saved["commits"]).dispose()
    return {(r["commit"], r["series"]): r for r in torch_gpu.rows(
        torch_gpu.reread(saved, db, tmp_path))}  # fmt: skip


def test_the_recorded_torch_history_names_each_regression_its_kernel_and_cause(
    tmp_path: Path,
) -> None:
    table = replayed(RESULTS, tmp_path)
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


def test_the_whole_torch_history_on_an_h100_is_called_explained_and_closed_by_its_fix(
    tmp_path: Path,
) -> None:
    table = replayed(RESULTS.parent / "torch_h100", tmp_path)
    assert len({c for c, _ in table}) == 7  # base, A/A, step, innocent, step, innocent, fix
    triton, operator = table[(2, SOFTMAX)], table[(4, WIDE)]
    assert triton["verdict"] == operator["verdict"] == "regressed"
    assert triton["kernel"] == "softmax_kernel" and "shared-memory wavefronts" in triton["cause"]
    assert "num_warps: 16" in triton["choices"][0]["head"]
    assert operator["kernel"].startswith("scale_rows_kernel")
    assert operator["cause"].startswith("uncoalesced access")
    assert abs(operator["reported"] - operator["truth"]) < 0.01, operator
    # The 16-warp softmax's own truth moved between the two times it was measured (the same two
    # builds: +38.8% at the step, +47.7% read back from the fix): the report lies between.
    fix = table[(6, SOFTMAX)]
    back = 1 / (1 + fix["truth"]) - 1
    assert triton["truth"] < triton["reported"] < back, (triton, back)
    # The fix: both series back, both alerts closed by it; the innocent commits call nothing.
    assert fix["verdict"] == "improved" and abs(fix["reported"] - fix["truth"]) < 0.01
    assert table[(6, WIDE)]["verdict"] in ("improved", "pending")  # settles on the next run
    assert triton["alert"] == operator["alert"] == "fixed"
    called = {key for key, r in table.items() if r["verdict"] in ("regressed", "improved")}
    assert called == {(2, SOFTMAX), (4, WIDE), (6, SOFTMAX)}, called

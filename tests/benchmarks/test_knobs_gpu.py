"""The knobs history of issue 47 (benchmarks/knobs_gpu.py) on CPU: the repository it builds
(each knob turned once by its own commit, A/A commits after, one commit pushed with the next,
the fix back to the base's code), the suite's workloads as the runner lists them, the truth's
processes combined, and the table from a saved run."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from benchmarks import knobs_gpu
from benchmarks.history_gpu import git
from runner.measure.phase import run_phase
from runner.suite.load import load_suite


def test_each_knob_is_turned_by_its_own_commit_and_the_fix_restores_the_base(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    commits = knobs_gpu.make_repository(repo)
    assert [c["knob"] for c in commits if c["kind"] == "step"] == list(knobs_gpu.KNOBS)
    assert [c["index"] for c in commits if c["with_next"]] == [3]  # pushed with the ~4% step
    assert commits[4]["knob"] == "redo"
    for a, b in itertools.pairwise(commits):
        changed = git(repo, "diff", "--name-only", a["sha"], b["sha"]).split()
        if b["knob"]:
            module, old, new, _ = knobs_gpu.KNOBS[b["knob"]]
            assert changed == [f"knobs_kernels/{module}"], (b, changed)
            diff = git(repo, "diff", "-U0", a["sha"], b["sha"])
            assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in
                    ("+++", "---")] == [f"-{old}", f"+{new}"]  # fmt: skip
        elif b["kind"] == "fix":
            modules = {f"knobs_kernels/{knob[0]}" for knob in knobs_gpu.KNOBS.values()}
            assert sorted(changed) == sorted(modules)
        else:
            assert changed == ["README.md"], (b, changed)
    # the fix leaves the kernels as the base had them
    assert git(repo, "diff", "--name-only", commits[0]["sha"], commits[-1]["sha"]) == "README.md"


def test_the_runner_lists_the_suites_workloads_without_torch(tmp_path: Path) -> None:
    knobs_gpu.make_repository(tmp_path / "repo")
    listing = run_phase(load_suite(tmp_path / "repo"), "list", []).listing
    assert [w["id"] for w in listing] == list(knobs_gpu.SERIES)
    assert all(w["tolerance"] > 0 and w["kernels"] for w in listing)


def test_the_truths_processes_are_averaged_with_what_each_knob_moves_besides() -> None:
    def process(change: float, compile_head: float) -> dict:
        return {
            "8:block.py": {"duration": {"change": change, "base_us": 100.0, "head_us": 101.0},
                           "compile_s": {"base": 1.0, "head": compile_head}},
            "10:softmax.py": {"duration": {"change": 0.0, "base_us": 90.0, "head_us": 90.0},
                              "peak_bytes": {"base": 1e8, "head": 2e8}},
        }  # fmt: skip

    truth = knobs_gpu.combine([process(0.01, 2.0), process(-0.01, 3.0)])
    block = truth["8"]["block[cols=8192,rows=8192]"]
    assert block["change"] == 0.0 and block["process_changes"] == [0.01, -0.01]
    assert block["compile_s"] == {"base": 1.0, "head": 2.5}
    assert truth["10"]["softmax[cols=4096,rows=8192]"]["peak_bytes"] == {"base": 1e8, "head": 2e8}


def test_the_table_names_the_truth_the_report_the_measures_the_alert_and_the_bisection() -> None:
    sha = [c * 40 for c in "abc"]
    wid, name = "tmatmul[k=4096,m=4096,n=4096]", "tmatmul"
    params = {"k": 4096, "m": 4096, "n": 4096}

    def metrics(change: float | None, verdict: str, measures: list) -> dict:
        return {"workloads": [{"workload": name, "params": params, "measures": measures,
                               "kernels": [{"metrics": [{"change": change,
                                                         "verdict": verdict}]}]}]}  # fmt: skip

    saved = {
        "commits": [{"index": i, "sha": s, "kind": k, "knob": n, "with_next": i == 1}
                    for i, (s, k, n) in enumerate(zip(sha, ("base", "innocent", "step"),
                                                      (None, None, "num_stages"),
                                                      strict=True))],
        "truth": {"2": {wid: {"change": 0.622, "process_changes": [0.62, 0.624],
                              "base_us": 250.0, "head_us": 405.5}}},
        "reported": {sha[0]: metrics(None, "new", []),
                     sha[2]: metrics(0.631, "regressed", [
                         {"said": "prepare time 1.0 s → 1.9 s (+90%), regressed",
                          "verdict": "regressed"},
                         {"said": "peak memory 1 GB → 1 GB, unchanged", "verdict": "unchanged"}])},
        "alerts": [{"id": 4, "commit": sha[2], "series": {"workload": name},
                    "summary": "matmul_kernel: num_stages 3 → 1", "bisect": {"state": "done"},
                    "first_bad_commit": sha[2]}],
        "seconds": {sha[0][:12]: 70.2, sha[2][:12]: 58.9},
    }  # fmt: skip
    rendered = knobs_gpu.render(knobs_gpu.summarize(saved))
    assert (f"| 2 num_stages | {wid} | +62.2% | +63.1% | regressed | prepare time 1.0 s → 1.9 s "
            "(+90%), regressed | matmul_kernel: num_stages 3 → 1 |") in rendered  # fmt: skip
    assert "| 1 " not in rendered  # pushed with the next: no run, no row
    assert "alert 4 at commit 2: bisected to commit 2" in rendered
    assert f"commit {sha[2][:12]}: settled 59 s after its push" in rendered


def test_resuming_where_no_call_left_a_history_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = knobs_gpu.main(["--out", str(tmp_path / "out"), "--resume", "--work",
                           str(tmp_path / "nothing")])  # fmt: skip
    assert code == 2
    assert "nothing to resume" in capsys.readouterr().err


def test_each_kind_of_commit_runner_cost_measures_applies_to_the_suite(tmp_path: Path) -> None:
    """Every COST_KINDS change is one commit of the knobs suite's snapshot, and runner_cost
    judges it as what it is: the comment reaches no kernel, the edits those the documents say,
    each within the 60 s budget of a commit that is not the host's first."""
    from benchmarks import runner_cost

    repo = tmp_path / "repo"
    repo.mkdir()
    author = "t <t@example.invalid>"
    runner_cost.snapshot(knobs_gpu.SUITE, repo, author, "the suite")
    for run, (_, spec) in enumerate(knobs_gpu.COST_KINDS, start=1):
        before = git(repo, "rev-parse", "HEAD")
        runner_cost.change(repo, spec, run, author)
        changed = git(repo, "diff", "--name-only", before, "HEAD").split()
        assert changed == [spec.partition(":")[0]], (spec, changed)
    specs = [spec for _, spec in knobs_gpu.COST_KINDS]
    runs = len(specs) + 1
    edit = runner_cost.SOURCE_EDIT
    assert runner_cost.changed_kernels(specs, runs) == [set(), set(), {edit}, {edit}, {edit}]
    assert runner_cost.budgets(specs, runs)[1:] == [runner_cost.BUDGET_S] * len(specs)
    listed = run_phase(load_suite(repo), "list", []).listing
    assert "softmax[cols=2048,rows=8192]" in {w["id"] for w in listed}  # the parameter's commit

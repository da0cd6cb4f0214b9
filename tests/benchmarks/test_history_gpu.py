"""The H100 history benchmark on the CPU: its repository of commits, its suite's nvcc build, and
the table's targets, which must come out FAIL for a kernelwatch that cries wolf or misreports."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks import history_gpu
from benchmarks.history_table import Row, render, score

SUITE = Path(history_gpu.__file__).resolve().parent / "history_suite"


def test_the_history_changes_what_it_says_and_nothing_else(tmp_path: Path) -> None:
    commits = history_gpu.make_repository(tmp_path / "repo")
    assert [c["kind"] for c in commits] == [k for k, _ in history_gpu.HISTORY]
    step = next(c for c in commits if c["kind"] == "step")
    fix = next(c for c in commits if c["kind"] == "fix")
    second = [c for c in commits if c["kind"] == "step"][1]
    assert second["extras"] == history_gpu.STEPS["step2"]
    changed = history_gpu.git(
        tmp_path / "repo", "diff", "--name-only", f"{step['sha']}~1", step["sha"]
    )
    assert changed.split() == ["histsuite/cuda/extra.h", "histsuite/cuda/wander.h"]
    header = (tmp_path / "repo" / "histsuite" / "cuda" / "extra.h").read_text()
    assert "#define EXTRA_W3 0LL" in header  # the last fix took the extra reads away again
    shown = history_gpu.git(tmp_path / "repo", "show", f"{step['sha']}:histsuite/cuda/extra.h")
    assert "#define EXTRA_W0 0LL" in shown  # A/A kernels never change
    assert "#define EXTRA_W3 4026532LL" in shown  # 6% of 8 x 32M bytes, in floats
    assert fix["extras"] == {} and step["extras"] == history_gpu.STEP
    # The first step makes the tiled SGEMM spill; the second changes the other two wanderers.
    spilled = history_gpu.git(tmp_path / "repo", "show", f"{step['sha']}:histsuite/cuda/wander.h")
    assert "#define TILED_SPILL 1" in spilled and "#define SPILL_EXTRA_K 0" in spilled
    assert second["wander"] == {"SPILL_EXTRA_K": 256, "L2_EXTRA_PASSES": 2}
    assert fix["wander"] == {} and commits[-1]["wander"] == {}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_suite_builds_with_nvcc(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "histsuite.build", "--out", str(tmp_path), "--arch", "sm_90"],
        cwd=SUITE,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "stream.cubin").stat().st_size > 0
    assert done.stdout.count("Function properties for hist_w") == 12
    # The always-spilling SGEMM spills; the tiled one does not until a commit says so.
    assert spill_stores(done.stdout, "hist_spill") > 0
    assert spill_stores(done.stdout, "hist_tiled") == 0


def spill_stores(ptxas: str, kernel: str) -> int:
    """The bytes of spill stores ptxas's report gives for `kernel`."""
    found = re.search(rf"Function properties for {kernel}\n.* (\d+) bytes spill stores", ptxas)
    assert found is not None, ptxas
    return int(found.group(1))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_spill_step_makes_the_tiled_sgemm_spill(tmp_path: Path) -> None:
    tree = tmp_path / "suite"
    shutil.copytree(SUITE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    header = history_gpu.wander_header(history_gpu.WANDER["step"])
    (tree / "histsuite" / "cuda" / "wander.h").write_text(header)
    done = subprocess.run(
        [sys.executable, "-m", "histsuite.build", "--out", str(tmp_path / "b"), "--arch", "sm_90"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    assert spill_stores(done.stdout, "hist_tiled") > 0


def rows(reported: dict[int, tuple[float, str]], truth: dict[int, float]) -> list[Row]:
    """One long series: commit 3 steps up 5%, commit 7 back; `reported` overrides."""
    out = []
    for i in range(10):
        changed = i in (3, 7)
        true = truth.get(i, 0.0005)
        change, verdict = reported.get(i, (true, "unchanged"))
        out.append(Row(i, "x", "s", "long", changed, i > 3 and not changed, true, change, verdict))
    return out


TRUE = {3: 0.05, 7: -0.048}
RIGHT = {3: (0.051, "regressed"), 7: (-0.047, "improved")}


def test_a_kernelwatch_that_tells_the_truth_passes() -> None:
    s = score(rows(RIGHT, TRUE))
    assert s.passed()["no false verdict after a shift"]
    assert s.recall["long"] == (2, 2)
    assert s.within == s.compared == 10
    table = render(rows(RIGHT, TRUE))
    assert (
        "FAIL no false" not in table
        and "FAIL no work notice" not in table
        and "PASS reported within 2 pp" in table
    )


def test_crying_wolf_misreporting_and_missing_fail() -> None:
    wolf = score(rows({**RIGHT, 5: (0.03, "regressed")}, TRUE))
    assert not wolf.passed()["no false verdict after a shift"]
    assert wolf.false_after_shift == 1
    off = score(rows({**RIGHT, 3: (0.08, "regressed")}, TRUE))
    assert not off.passed()["reported within 2 pp of the truth (|truth| <= 50%, steady kernels)"]
    missed = score(rows({**RIGHT, 7: (-0.047, "unchanged")}, TRUE))
    assert missed.recall["long"] == (1, 2)
    assert not missed.passed()["recall >= 95% at >= 2% (long)"]


def test_a_change_of_its_class_target_read_off_by_more_than_2_points_fails() -> None:
    """Issue 31's bar: every change of at least its class target (2% for a long kernel) within
    2 points of the truth; an innocent series read off by its run's offset fails only the check
    of every steady series."""
    check = "every change of at least its class target within 2 pp of the truth"
    right = score(rows(RIGHT, TRUE))
    assert right.detected_within == (2, 2) and right.passed()[check]
    off = score(rows({**RIGHT, 7: (-0.071, "improved")}, TRUE))
    assert off.detected_within == (1, 2) and not off.passed()[check]
    assert f"FAIL {check}" in render(rows({**RIGHT, 7: (-0.071, "improved")}, TRUE))
    innocent = score(rows({**RIGHT, 5: (0.025, "unchanged")}, TRUE))
    assert innocent.passed()[check] and innocent.within == innocent.compared - 1
    small = {3: 0.015, 7: -0.015}  # below the long class's 2%: held by the other check alone
    assert score(rows({3: (0.045, "regressed")}, small)).detected_within == (0, 0)


def test_a_regression_found_without_its_alert_fails() -> None:
    """Where the history recorded its alerts, each regression found must have one at its
    commit; a history without them is not judged on it."""
    found = [replace(r, alerted=r.commit == 3) for r in rows(RIGHT, TRUE)]
    assert score(found).alerted == (1, 1)
    assert score(found).passed()["every regression found has its alert at its commit"]
    lost = [replace(r, alerted=False) for r in found]
    assert score(lost).alerted == (0, 1)
    assert "FAIL every regression found has its alert at its commit" in render(lost)
    assert score(rows(RIGHT, TRUE)).alerted is None
    assert "every regression found" not in render(rows(RIGHT, TRUE))


def test_the_truth_is_the_change_of_the_central_values_over_every_process() -> None:
    from benchmarks.history_truth import central, combine

    assert central([3.84] * 10 + [3.872] * 6 + [4.2] * 2) == pytest.approx(3.852)
    one = {"a..b": {"w": {"change": 0.10, "base": [4.0, 4.0, 4.0], "head": [4.4, 4.4, 4.4]}}}
    two = {"a..b": {"w": {"change": 0.20, "base": [4.0, 4.0], "head": [4.8, 4.8]}}}
    merged = combine([one, two])["a..b"]["w"]
    # the processes' samples pooled, as kernelwatch's runs pool their processes (not the mean
    # of the processes' changes), and their interquartile mean: 4.56 / 4.0
    assert merged["change"] == pytest.approx(0.14)
    assert merged["placement_changes"] == [0.10, 0.20]
    assert (merged["base_us"], merged["head_us"]) == (4.0, pytest.approx(4.56))
    assert merged["process_medians"] == [[4.0, 4.4], [4.0, 4.8]]
    # On CUPTI's 32 ns grid a median snaps to a tick (0.9% of 3.5 us); the central value does
    # not: a kernel that takes the upper tick in 45% of its samples is read between them.
    ticks = {"a..b": {"w": {"change": 0.0, "base": [3.456] * 55 + [3.488] * 45,
                            "head": [3.456] * 45 + [3.488] * 55}}}  # fmt: skip
    fine = combine([ticks])["a..b"]["w"]
    assert 0 < fine["change"] < 0.009 and fine["base_us"] not in (3.456, 3.488)


def test_the_cause_and_torch_truths_average_their_processes() -> None:
    from benchmarks.history_truth import mean_over_processes

    runs = [{"w": {"change": 0.1, "base_us": 4.0, "head_us": 4.4}},
            {"w": {"change": 0.3, "base_us": 6.0, "head_us": 7.8}}]  # fmt: skip
    assert mean_over_processes(runs) == {
        "w": {
            "change": pytest.approx(0.2),
            "process_changes": [0.1, 0.3],
            "base_us": 5.0,
            "head_us": pytest.approx(6.1),
        }
    }


def test_process_offsets_shared_by_a_class_are_told_apart_from_independent_ones() -> None:
    from benchmarks.history_processes import summary

    rng = np.random.default_rng(3)
    classes = {f"s{i}": "short" for i in range(4)} | {f"l{i}": "long" for i in range(4)}
    medians = {}
    for commit in range(30):
        process = rng.normal(0, 0.03, 6)  # one offset per process, the same for every series
        medians[str(commit)] = {
            **{f"s{i}": list(4.0 * (1 + process)) for i in range(4)},
            **{f"l{i}": list(90.0 * (1 + rng.normal(0, 0.001, 6))) for i in range(4)},
        }
    lines = dict(line.split(": ", 1) for line in summary(medians, classes))
    shared = {cls: int(text.split("; ")[1].split("%")[0]) for cls, text in lines.items()}
    assert shared["short"] == 100  # all of it: a state of the process
    assert shared["long"] < 50  # independent series: about a quarter
    assert float(lines["short"].split("sit ")[1].split("%")[0]) > 2.0


def test_a_history_cut_off_goes_on_in_a_second_call_without_pushing_twice(tmp_path: Path) -> None:
    """record_history on the CPU suite through a real serve and agent, in two calls on one work
    folder (as two device calls): the second goes on with the first's database and runner,
    pushes no commit whose run job exists, and reads every commit at the end."""
    from tests.runner.gitrepo import cpu_suite_repo

    _, first, second = cpu_suite_repo(tmp_path / "repo")
    commits = [{"index": 0, "sha": first, "kind": "base"},
               {"index": 1, "sha": second, "kind": "step"}]  # fmt: skip
    deadline = time.monotonic() + 240
    cpu = ("--cpu",)  # the agent takes CPU suites
    one = history_gpu.record_history(tmp_path, commits[:1], deadline, "bench/cpu", agent_args=cpu)
    assert list(one["at_push"]) == [first]
    # as a call cut off after pushing commit 0 would leave it: its run job exists, so the
    # second call waits for it instead of pushing it again
    two = history_gpu.record_history(tmp_path, commits, deadline, "bench/cpu",
                                     earlier=one["at_push"], agent_args=cpu)  # fmt: skip
    assert list(two["reported"]) == [first, second]
    runs = sorted(j["commit"] for j in two["jobs"] if j["kind"] == "run")
    assert runs == sorted([first, second])
    assert {j["state"] for j in two["jobs"]} == {"succeeded"}
    assert "runner 'h100-a'" in (tmp_path / "agent.log").read_text()


def test_a_commit_pushed_with_the_next_is_one_push_and_the_slowdown_is_bisected_to_its_commit(
    tmp_path: Path,
) -> None:
    """record_history on the CPU suite through a real serve and agent: a README commit and a
    slower one pushed together (`with_next`) make one push, so one run job, at the head; the
    service finds the slowdown there and bisects it to the slower commit, not the README one."""
    from tests.runner.gitrepo import CPU_SUITE, commit_all, git

    repo = shutil.copytree(CPU_SUITE, tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    shas = [commit_all(repo, "cpu suite")]
    (repo / "README.md").write_text("Notes that change no kernel.\n")
    shas.append(commit_all(repo, "notes"))
    source = (repo / "cpu_kernels.py").read_text()
    (repo / "cpu_kernels.py").write_text(source.replace("REPEAT = 1", "REPEAT = 4"))
    shas.append(commit_all(repo, "repeat the work 4x"))
    kinds = ("base", "innocent", "step")
    commits = [{"index": i, "sha": sha, "kind": kinds[i], "with_next": i == 1}
               for i, sha in enumerate(shas)]  # fmt: skip
    found = history_gpu.record_history(tmp_path, commits, time.monotonic() + 400, "bench/cpu",
                                       agent_args=("--cpu",))  # fmt: skip
    runs = [j["commit"] for j in found["jobs"] if j["kind"] == "run"]
    assert sorted(runs) == sorted([shas[0], shas[2]])  # the README commit was no push of its own
    assert list(found["seconds"]) == [shas[0][:12], shas[2][:12]]
    opened = [a for a in found["alerts"] if a["commit"] == shas[2] and a["state"] == "open"]
    assert opened
    assert {a["first_bad_commit"] for a in opened} == {shas[2]}, opened

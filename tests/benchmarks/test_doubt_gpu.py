"""The GPU history of doubt (benchmarks/doubt_gpu.py) on CPU: the repository it builds (the
graph break in commit 1 and out in the fix, README-only commits between), and its table from a
saved run: the seconds from a commit's push to its alert's opening, and the two-level series'
verdicts that were not unchanged."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from benchmarks import doubt_gpu
from benchmarks.history_gpu import git


def test_the_history_breaks_the_graph_once_and_mends_it(tmp_path: Path) -> None:
    commits = doubt_gpu.make_repository(tmp_path / "repo")
    assert [c["kind"] for c in commits] == ["base", "step", "innocent", "innocent", "fix"]
    repo = tmp_path / "repo"
    changed = [git(repo, "diff", "--name-only", a["sha"], b["sha"]).split()
               for a, b in itertools.pairwise(commits)]  # fmt: skip
    assert changed == [[doubt_gpu.BLOCK], ["README.md"], ["README.md"],
                       [doubt_gpu.BLOCK]]  # fmt: skip
    block = git(repo, "show", f"{commits[1]['sha']}:{doubt_gpu.BLOCK}")
    assert "GRAPH_BREAK = True" in block


def test_the_table_times_each_alert_from_its_push_and_counts_false_two_level_verdicts() -> None:
    sha = ["a" * 40, "b" * 40]
    saved = {
        "commits": [{"index": 0, "sha": sha[0], "kind": "base", "what": None},
                    {"index": 1, "sha": sha[1], "kind": "step", "what": "graph break"}],
        "truth": {"1": {doubt_gpu.SERIES[0]: {"change": 0.31, "process_changes": [0.3, 0.32],
                                              "base_us": 1000.0, "head_us": 1310.0}}},
        "reported": {s: {"workloads": [
            {"workload": "block", "params": {"cols": 8192, "rows": 8192},
             "kernels": [{"metrics": [{"change": 0.3 if s == sha[1] else None,
                                       "verdict": "regressed" if s == sha[1] else "new",
                                       "analysis": {"note": "confirmed ..."}}]}]},
            {"workload": "bimodal", "params": {"cols": 8192, "rows": 8192},
             "kernels": [{"metrics": [{"change": 0.03, "verdict": "regressed"
                                       if s == sha[1] else "new", "analysis": {}}]}]},
        ]} for s in sha},
        "jobs": [{"kind": "run", "commit": sha[1], "created_at": "2026-12-07T00:00:00+00:00"},
                 {"kind": "confirm", "commit": sha[1],
                  "created_at": "2026-12-07T00:01:00+00:00"}],
        "alerts": [{"id": 7, "commit": sha[1], "state": "open", "summary": "block +30%",
                    "series": {"workload": "block"},
                    "events": [{"to_state": "suspected", "at": "2026-12-07T00:00:50+00:00",
                                "actor": "kernelwatch", "note": ""},
                               {"to_state": "open", "at": "2026-12-07T00:01:20+00:00",
                                "actor": "runner h100-a", "note": "confirmed interleaved"}]}],
    }  # fmt: skip
    summary = doubt_gpu.summarize(saved)
    (alert,) = summary["alerts"]
    assert (alert["commit"], alert["seconds_after_push"], alert["by"]) == (1, 80.0, "runner h100-a")
    assert [r["series"] for r in summary["false_two_level"]] == [doubt_gpu.TWO_LEVELS]
    rendered = doubt_gpu.render(summary)
    assert "| 1 step | block[cols=8192,rows=8192] | +31.0% | +30.0% | regressed |" in rendered
    assert "80.0 s after its push" in rendered
    assert "verdicts on the two-level series other than unchanged: 1\n" in rendered
    assert rendered.endswith("alerts at commits that changed no source: 0")
    # An alert at a commit that changed no source is a false one, a measure's too.
    saved["commits"][1]["kind"] = "innocent"
    assert doubt_gpu.render(doubt_gpu.summarize(saved)).endswith(
        "alerts at commits that changed no source: 1"
    )


def test_resuming_where_no_call_left_a_history_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = doubt_gpu.main(["--out", str(tmp_path / "out"), "--resume", "--work",
                           str(tmp_path / "nothing")])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        f"doubt_gpu: nothing to resume in {tmp_path / 'nothing'} (progress.json missing)\n"
    )
    assert not (tmp_path / "nothing").exists()  # nothing made, nothing removed

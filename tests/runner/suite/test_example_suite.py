"""docs/example-suite as docs/suites.md promises it: listed without a GPU, each documented mistake
refused in the documented words, in one line; correct and timed on a GPU."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "example-suite"
DOC = (ROOT / "docs" / "suites.md").read_text()
RUNNER = Path(sys.executable).with_name("kernelwatch-runner")


def runner_list(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RUNNER, "list", "--repo", str(repo), "--json"], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_a_suite_is_listed_from_a_clone_url_at_a_commit(tmp_path: Path) -> None:
    """As `run` takes it: `list --repo URL --commit REV` lists the suite of that commit."""
    from tests.runner.gitrepo import commit_all, git

    repo = tmp_path / "suite"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    first = commit_all(repo, "the example")
    toml = repo / "kernelwatch.toml"
    toml.write_text(toml.read_text().replace('name = "example"', 'name = "renamed"'))
    commit_all(repo, "renamed")
    for rev, name in ((first, "example"), ("HEAD", "renamed")):
        done = subprocess.run(
            [RUNNER, "list", "--repo", f"file://{repo}", "--commit", rev, "--cache",
             str(tmp_path / "cache")], capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"suite {name} (2 workloads)" in done.stdout
    assert list((tmp_path / "cache" / "worktrees").iterdir()) == []  # nothing left behind


def test_the_example_lists_without_a_gpu() -> None:
    done = runner_list(EXAMPLE)
    assert done.returncode == 0, done.stderr
    listed = {w["id"]: w for w in json.loads(done.stdout)}
    assert set(listed) == {"saxpy[n=4096]", "saxpy[n=16777216]"}
    small = listed["saxpy[n=4096]"]
    assert small["kernels"] == ["saxpy"] and small["flops"] == 2 * 4096
    assert small["timing_method"] == "cupti"
    assert listed["saxpy[n=16777216]"]["timing_method"] == "cuda_events"


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        file = repo / path
        text = file.read_text()
        assert old in text, f"{old!r} not in {path}"
        file.write_text(text.replace(old, new))

    return change


MISTAKES = {
    "no kernelwatch.toml": (lambda repo: (repo / "kernelwatch.toml").unlink(),
                            "kernelwatch.toml does not exist: declare the suite there"),
    "a TOML typo": (_edit("kernelwatch.toml", 'name = "example"', 'name = "example'),
                    "kernelwatch.toml is not valid TOML: "),
    "device gpu": (_edit("kernelwatch.toml", 'device = "cuda"', 'device = "gpu"'),
                   "[suite] device must be 'cuda' or 'cpu', not 'gpu'"),
    "no such module": (_edit("kernelwatch.toml", "example_kernels.workloads",
                             "example_kernels.workload"),
                       "the workloads module 'example_kernels.workload' (kernelwatch.toml [suite] "
                       "workloads) cannot be imported: ModuleNotFoundError: "),
    "no all_workloads": (_edit("example_kernels/workloads.py", "def all_workloads",
                               "def workloads"),
                         "the workloads module 'example_kernels.workloads' has no "
                         "all_workloads(): define it to return the suite's workloads"),
    "one id twice": (_edit("example_kernels/workloads.py", "Saxpy(1 << 24,", "Saxpy(1 << 12,"),
                     "workload id 'saxpy[n=4096]' is given twice: every id must be unique"),
    "no prepare": (_edit("example_kernels/workloads.py", "def prepare(", "def prepared("),
                   "workload 'saxpy[n=4096]' has no prepare: a workload needs id, name, params, "
                   "kernels, tags, precision, tolerance, flops, bytes, prepare(seed)"),
    "tolerance tight": (_edit("example_kernels/workloads.py", "tolerance = 1e-6 ",
                              'tolerance = "tight" '),
                        "workload 'saxpy[n=4096]': tolerance 'tight' is not a number >= 0"),
    "params not JSON": (_edit("example_kernels/workloads.py", 'self.params = {"n": n}',
                              'self.params = {"n": {n}}'),
                        "workload 'saxpy[n=4096]': params {'n': {4096}} are not JSON"),
    "timing method bogus": (_edit("example_kernels/workloads.py",
                                  'self.timing_method = "cupti" if',
                                  'self.timing_method = "bogus" if'),
                            "workload 'saxpy[n=4096]': timing_method 'bogus' is none of"),
    "kernels a string": (_edit("example_kernels/workloads.py", 'kernels = ("saxpy",)',
                               'kernels = "saxpy"'),
                         "workload 'saxpy[n=4096]': kernels 'saxpy' is not a tuple of names"),
    "max_seconds -1": (_edit("kernelwatch.toml", "max_seconds = 1.0", "max_seconds = -1"),
                       "kernelwatch.toml: [timing] max_seconds = -1.0: it must be a number > 0"),
    "default (": (_edit("kernelwatch.toml", 'default = ["smoke", "bandwidth"]', 'default = ["("]'),
                  "[suite] default '(' is neither a tag nor a regular expression over ids"),
    "default selects nothing": (_edit("kernelwatch.toml", 'default = ["smoke", "bandwidth"]',
                                      'default = ["nothing"]'),
                                "[suite] default ['nothing'] selects none of the 2 workloads"),
}  # fmt: skip


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_documented_mistake_gets_its_documented_line(tmp_path: Path, mistake: str) -> None:
    change, says = MISTAKES[mistake]
    assert says.split(": ...")[0] in DOC.replace("`", ""), f"docs/suites.md lacks {says!r}"
    repo = tmp_path / "suite"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    change(repo)
    done = runner_list(repo)
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("kernelwatch-runner list: error: ") and says in line, line
    assert "Traceback" not in done.stderr


def test_the_page_installs_from_the_repository_and_serves_with_the_token_it_posts_with() -> None:
    """Read from an empty repository: kernelwatch is on no package index, and step 4's post
    answers 401 unless the service it starts has the admin token the post sends."""
    installs = [line for line in DOC.splitlines() if "pip install " in line]
    assert installs and all("'.[" in line or " @ git+" in line for line in installs), installs
    step = DOC.split("## 4. ")[1].split("\n## ")[0]
    order = [
        "export KERNELWATCH_ADMIN_TOKEN=",
        "kernelwatch serve",
        "Bearer $KERNELWATCH_ADMIN_TOKEN",
    ]
    found = [step.find(s) for s in order]
    assert -1 not in found and found == sorted(found), dict(zip(order, found, strict=True))


def test_the_page_names_every_precision_the_pages_read() -> None:
    from dashboards.devices import _KNOWN, _PRECISION

    row = next(line for line in DOC.splitlines() if line.startswith("| `precision`"))
    known = {p for _, peak in _KNOWN for p in peak.flops} | set(_PRECISION)
    assert [p for p in sorted(known) if f"`{p}`" not in row] == []


@pytest.mark.gpu
def test_the_example_is_correct_and_timed_on_a_gpu() -> None:
    from runner.measure.phase import run_phase
    from runner.suite.load import load_suite

    suite = load_suite(EXAMPLE)
    ids = ["saxpy[n=4096]", "saxpy[n=16777216]"]
    checked = run_phase(suite, "check", ids)
    for wid in ids:
        outcome = checked.outcomes[wid]
        assert outcome.status == "ok" and outcome.result["passed"], outcome
    timed = run_phase(suite, "time", ids)
    methods = {wid: timed.outcomes[wid].result["method"] for wid in ids}
    assert methods == {"saxpy[n=4096]": "cupti", "saxpy[n=16777216]": "cuda_events"}
    median = statistics.median(timed.outcomes["saxpy[n=16777216]"].result["samples"])
    # 201 MB moved: at most a little faster than this device copies memory, at least a tenth
    # of that (the bounds are this GPU's, whatever its model)
    copy = copy_bandwidth()
    assert 201e6 / (1.2 * copy) * 1e6 <= median <= 10 * 201e6 / copy * 1e6, (median, copy)


def copy_bandwidth() -> float:
    """Bytes a second this GPU moves in a device-to-device copy (read and written, counted)."""
    import cupy

    src = cupy.ones(256 << 20, dtype=cupy.uint8)
    dst = cupy.empty_like(src)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(10):
        start.record()
        dst[...] = src
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return 2 * src.nbytes / statistics.median(times)


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    """`kernelwatch-runner list --json | head`, the reader gone before the listing is written:
    the runner stops quietly with 141 (as after SIGPIPE), no traceback."""
    with subprocess.Popen([RUNNER, "list", "--repo", str(EXAMPLE), "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # long before the suite's worker has listed it
        assert proc.wait(timeout=60) == 141
        assert b"Traceback" not in proc.stderr.read()

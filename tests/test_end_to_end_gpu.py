"""The end-to-end flow of test_end_to_end.py on a real GPU with the real kernel suite.

A temporary git repository holds this working tree's suite (`kernelwatch.toml` and `kernels/`);
its second commit makes a real CUDA kernel really slower: `transpose_tiled` spins ~20,000 SM
cycles (~10 us) before its work. A real `kernelwatch serve` process (SQLite), a signed push
webhook per commit, a real `kernelwatch-runner agent` that claims the jobs over HTTP and runs the
smoke-sized transpose, dropout and forward GEMM (build, correctness, timing in 3 processes, ncu),
posts the documents; a third commit changes no kernel, and its run settles the second one's
verdict (pending against a level of one run: service.analysis.verdicts). The slower kernel's
launch changed, so its run timed it interleaved with the first commit's build and that run
confirms it, with no confirmation job; the commit metrics API shows the slower series, and only
that one, and its alert opens.

Marked `gpu`: skipped with the reason where CuPy or a GPU is missing (tests/conftest.py). The
processes are started as `python -m service.cli` and `python -m runner.cli`, so a GPU host that
carries the service's dependencies on PYTHONPATH (no installed console scripts) runs it too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import agent_process, job, push, service_process, tail, wait_for
from tests.runner.gitrepo import commit_all, git

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "acme/kernels"
# The smoke shapes of three kernels: the transpose is made slower, the other two are controls.
ONLY = r"^transpose\[cols=70,rows=33\]|^dropout\[n=4099,|^gemm_fwd\[act=relu,k=16,m=32,n=64\]"
SLOW = "transpose"
SPIN_CYCLES = 20_000
TILE_DECL = "__shared__ float tile[TILE][TILE + 1];"


def _python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def suite_repo(path: Path) -> tuple[Path, str, str, str]:
    """A repository of this tree's suite: a first commit, one with a really slower kernel, and
    one that changes no kernel."""
    path.mkdir()
    shutil.copy2(ROOT / "kernelwatch.toml", path / "kernelwatch.toml")
    shutil.copytree(
        ROOT / "kernels", path / "kernels", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(path, "init", "-q", "-b", "main")
    first = commit_all(path, "kernels: the suite as it is")
    source = path / "kernels" / "cuda" / "transpose.cu"
    text = source.read_text()
    assert TILE_DECL in text, "transpose.cu changed: update the e2e test's edit"
    spin = (
        f"{TILE_DECL}\n"
        f"  for (long long t0 = clock64(); clock64() - t0 < {SPIN_CYCLES};) {{\n"
        "  }  // really slower: every thread spins before it starts\n"
    )
    source.write_text(text.replace(TILE_DECL, spin))
    second = commit_all(path, "transpose: wait before the tile loads\n\nThis is slower.")
    (path / "NOTES.md").write_text("The transpose waits before its tile loads.\n")
    third = commit_all(path, "notes: no kernel changes")
    return path, first, second, third


@pytest.fixture
def service(db_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    pytest.importorskip("fastapi", reason="the service's dependencies are not installed")
    with service_process(db_url, tmp_path, _python("service.cli"), cwd=ROOT) as running:
        yield running


def _finished(url: str, job_id: int) -> bool:
    state = job(url, job_id)["state"]
    assert state not in ("failed", "cancelled"), job(url, job_id)
    return state == "succeeded"


def _alerts_settled(url: str) -> bool:
    alerts = httpx.get(f"{url}/api/v1/alerts").json()
    return bool(alerts) and all(a["state"] != "suspected" for a in alerts)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_push_to_regression_verdict_on_the_gpu(service, tmp_path: Path) -> None:
    url, env = service
    repo, first, second, third = suite_repo(tmp_path / "repo")
    token = subprocess.run(
        _python("service.cli", "runner-token", "create", "gpu-runner", "--labels", "gpu=any"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    runner = _python("runner.cli")
    with agent_process(
        runner, url, token, tmp_path, env, "--poll", "0.5", "--only", ONLY, cwd=ROOT
    ) as agent:
        try:
            (job1,) = push(url, repo, REPOSITORY, first, [first])
            wait_for(lambda: _finished(url, job1), agent, timeout=300)
            (job2,) = push(url, repo, REPOSITORY, second, [second])
            wait_for(lambda: _finished(url, job2), agent, timeout=300)
            # Against a level of one run the change is pending (that level's run-to-run wander
            # is not known yet); the next commit's run settles it.
            (job3,) = push(url, repo, REPOSITORY, third, [third])
            wait_for(lambda: _finished(url, job3), agent, timeout=300)
            # The regression is suspected, then confirmed by the same runner, base and head
            # interleaved.
            wait_for(lambda: _alerts_settled(url), agent, timeout=300)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nagent log:\n{tail(tmp_path / 'agent.log')}") from exc
    assert agent.returncode == 0, tail(tmp_path / "agent.log")

    metrics = httpx.get(f"{url}/api/v1/commits/{second[:12]}/metrics").json()
    assert metrics["commit"]["parents"] == [first]
    assert metrics["runs"][0]["status"] == "succeeded"
    workloads = {w["workload"]: w for w in metrics["workloads"]}
    assert set(workloads) == {"transpose", "dropout", "gemm_fwd"}, sorted(workloads)
    for name, workload in workloads.items():
        assert workload["status"] == "ok" and workload["correctness"]["passed"], workload
        (kernel,) = [k for k in workload["kernels"] if k["metrics"]]
        metric = kernel["metrics"][0]
        assert metric["unit"] == "us" and metric["method"] in ("cupti", "cuda_events"), metric
        assert metric["baseline"]["commit"] == first, metric
        if name == SLOW:
            assert kernel["kernel"] == "transpose_tiled"
            assert metric["change"] > 0.5, metric  # ~3 us + a ~10 us spin: really slower
            assert metric["verdict"] == "regressed", metric["analysis"]
            assert kernel["ncu_metrics"], workload["ncu_note"]  # hardware counters came along
        else:
            assert abs(metric["change"]) < 0.5, metric  # untouched kernels: no such change

    alerts = httpx.get(f"{url}/api/v1/alerts").json()
    opened = [a for a in alerts if a["state"] == "open"]
    assert [a["series"]["workload"] for a in opened] == [SLOW], alerts
    (alert,) = opened
    assert (alert["commit"], alert["base_commit"]) == (second, first)
    assert alert["confirmed_change"] > 0.5, alert
    # The transpose's launch changed since the runner last profiled it, so the second commit's
    # run timed it interleaved with the first commit's build (runner.run.paired): that run
    # confirmed the regression, and no confirmation job was queued (issue 52).
    assert alert["confirm_job_id"] is None, alert
    told = httpx.get(f"{url}/api/v1/alerts/{alert['id']}").json()
    (opening,) = [e for e in told["events"] if e["to_state"] == "open"]
    assert opening["actor"].startswith("runner of run "), told["events"]
    assert opening["note"].startswith("confirmed interleaved: +"), opening
    assert {j["kind"] for j in httpx.get(f"{url}/api/v1/jobs").json()} == {"run"}
    runners = httpx.get(f"{url}/api/v1/runners").json()
    assert runners[0]["name"] == "gpu-runner" and runners[0]["current_job_id"] is None
    assert not list((tmp_path / "spool").glob("*.json"))

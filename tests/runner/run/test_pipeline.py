"""The whole run on the CPU fixture suite: a really slower commit comes out slower."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.run import pipeline, timing_passes
from runner.run.pipeline import RunRequest, execute, repository_name
from service.schemas.document import RunDocument
from tests.runner.gitrepo import commit_all, cpu_suite_repo


def medians(document: dict) -> dict[str, float]:
    return {f"{w['name']}{w['params']}": w["timing"]["median"] for w in document["workloads"]}


def test_two_commits_of_the_cpu_suite(tmp_path: Path) -> None:
    repo, first, second = cpu_suite_repo(tmp_path / "repo")
    cache = tmp_path / "cache"
    before = execute(RunRequest(source=str(repo), rev=first, cache_dir=cache))
    after = execute(
        RunRequest(
            source=str(repo),
            rev=second,
            cache_dir=cache,
            runner={"name": "cpu-1", "host": "here", "labels": {}},
        )
    )
    for doc in (before, after):
        RunDocument.model_validate(doc)  # the service's own validator accepts real output
        assert doc["status"] == "succeeded"
        assert doc["branch"] == "main"
        assert doc["build"]["status"] == "ok"
        assert "build ok" in doc["build"]["log_tail"]
        assert len(doc["workloads"]) == 2
        for w in doc["workloads"]:
            assert w["correctness"]["passed"] is True
            assert len(w["timing"]["processes"]) == 3
    assert after["commit"]["parents"] == [first]
    assert before["environment"]["fingerprint"] == after["environment"]["fingerprint"]
    for key, slow in medians(after).items():
        assert slow > 1.8 * medians(before)[key], (key, slow, medians(before)[key])
    assert not list((cache / "worktrees").iterdir())
    # The second commit changed the kernels, not the references nor their inputs: kept.
    assert "correctness: references kept for 0 of 2; computed: " in before["log_tail"]
    said = [line for line in after["log_tail"].splitlines() if "references" in line]
    assert [line.split("] ", 1)[1] for line in said] == ["correctness: references kept for 2 of 2"]


def test_a_failed_build_is_a_result_not_a_crash(tmp_path: Path) -> None:
    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    toml = repo / "kernelwatch.toml"
    toml.write_text(toml.read_text().replace("print('build ok'", "sys.exit('nvcc: boom'); print("))
    broken = commit_all(repo, "break the build")
    doc = execute(RunRequest(source=str(repo), rev=broken, cache_dir=tmp_path / "cache"))
    RunDocument.model_validate(doc)
    assert doc["status"] == "build_failed"
    assert doc["build"]["status"] == "failed"
    assert "nvcc: boom" in doc["build"]["log_tail"]
    assert doc["workloads"] == []


def test_only_selects_workloads_by_regex(tmp_path: Path) -> None:
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    doc = execute(RunRequest(source=str(repo), rev=first, only="n=256", cache_dir=tmp_path / "c"))
    assert [w["params"] for w in doc["workloads"]] == [{"n": 256}]


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("https://github.com/acme/kernels.git", "acme/kernels"),
        ("git@github.com:acme/kernels.git", "acme/kernels"),
        ("/home/ada/my kernels", "my_kernels"),
    ],
)
def test_repository_names(source: str, name: str) -> None:
    assert repository_name(source) == name


def test_a_cuda_suite_on_a_host_without_its_gpu_stops_in_one_line_after_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU's check runs beside the build; its one line wins over the build that failed for
    want of the GPU, and nothing is checked or timed."""
    from runner.host import checks as host

    repo, _, _ = cpu_suite_repo(tmp_path / "repo")
    toml = (repo / "kernelwatch.toml").read_text()
    failing = '["{python} -c \\"import sys; sys.exit(\'nvcc: no GPU to build for\')\\""]'
    toml = toml.replace('device = "cpu"', 'device = "cuda"')
    toml = "\n".join(f"build = {failing}" if ln.startswith("build =") else ln
                     for ln in toml.splitlines())  # fmt: skip
    (repo / "kernelwatch.toml").write_text(toml)
    sha = commit_all(repo, "the suite on a GPU")
    monkeypatch.setattr(host, "probe_gpu", lambda: {"missing": "No module named 'cupy'"})
    monkeypatch.setenv("KERNELWATCH_WARM_WORKERS", "0")
    phases: list[str] = []

    def run_phase(suite: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        phases.append(mode)
        return real(suite, mode, *args, **kwargs)

    real = pipeline.run_phase
    monkeypatch.setattr(pipeline, "run_phase", run_phase)
    monkeypatch.setattr(timing_passes, "run_phase", run_phase)
    with pytest.raises(host.HostError, match="cannot run the CUDA suite 'cpu-fixture': cupy"):
        execute(RunRequest(source=str(repo), rev=sha, cache_dir=tmp_path / "cache"))
    assert phases == ["list"]  # nothing checked or timed


def test_each_process_says_how_long_its_prepare_took_and_the_workload_what_it_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workload whose `prepare` compiles (0.3 s here) beside one that only draws inputs."""
    monkeypatch.setenv("KW_FIXTURE_MISBEHAVE", "compiles")
    repo, first, _ = cpu_suite_repo(tmp_path / "repo")
    doc = execute(
        RunRequest(source=str(repo), rev=first, only="compiles|n=256", cache_dir=tmp_path / "c")
    )
    RunDocument.model_validate(doc)
    took = {w["name"]: [p["prepare_seconds"] for p in w["timing"]["processes"]]
            for w in doc["workloads"]}  # fmt: skip
    assert len(took["compiles"]) == 3 and min(took["compiles"]) >= 0.3
    assert max(took["fma"]) < 0.3
    # and what it chose there, its processes' distinct choices (seeds 0, 1, 2), sorted
    chose = {w["name"]: w.get("choices") for w in doc["workloads"]}
    assert chose == {"compiles": {"fma_cpu": "block=128 | block=64"}, "fma": {}}
    # and whether it found its compiled code in the runner's caches: the first timing process
    # found what the check compiled (nothing said: under a second of prepare, no miss), the
    # other seeds' versions were compiled afresh
    said = [line.split("] ", 1)[1] for line in doc["log_tail"].splitlines() if "caches" in line]
    assert said == [f"timing {i}/3: compile caches: 1 of 2 hit; compiles[n=8] miss (triton: 1 new "
                    "entries)" for i in (2, 3)], said  # fmt: skip


def test_the_slowest_prepare_says_what_torch_compile_took_of_it() -> None:
    from runner.measure.phase import Outcome

    compiled = {"frames": 2, "seconds": 8.1, "tracing": 0.3, "backend": 7.6}
    outcomes = {
        "block": Outcome("ok", {"prepare_seconds": 10.9, "torch_compile": compiled}),
        "scale": Outcome("ok", {"prepare_seconds": 0.4}),
    }
    assert timing_passes.prepare_note(outcomes) == (
        "prepare took 11.3 s of it (slowest block 10.9 s, torch.compile 8.1 s of it"
        " (2 frames; Dynamo tracing 0.3 s, backend 7.6 s))"
    )
    outcomes["block"].result.pop("torch_compile")  # a prepare that compiled nothing of torch's
    said = timing_passes.prepare_note(outcomes)
    assert said == "prepare took 11.3 s of it (slowest block 10.9 s)"

"""Whether a host can run jobs: each check with a piece missing, and the commands that use them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from runner import cli
from runner.host import checks as host
from runner.host.checks import HostError, agent_checks, can_run, gpu_checks, require_gpu
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

ROOT = Path(__file__).resolve().parents[3]
H100 = {"count": 1, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "free": 79 << 30,
        "total": 80 << 30, "runtime": 13000, "driver": 13000, "cupy": "14.2.0"}  # fmt: skip


def test_a_working_gpu_stack_is_three_ok_lines() -> None:
    checks = gpu_checks(H100)
    assert [(c.name, c.state) for c in checks] == [("cupy", "ok"), ("gpu", "ok"), ("cuda", "ok")]
    assert (
        checks[1].detail == "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.0 of 80.0 GiB free"
    )


@pytest.mark.parametrize(
    ("probe", "name", "state", "fix"),
    [
        ({"missing": "ModuleNotFoundError: No module named 'cupy'"}, "cupy", "missing",
         "kernelwatch[runner-cuda13]"),
        ({"wrong": "CUDARuntimeError: cudaErrorInsufficientDriver"}, "gpu", "missing",
         "install the NVIDIA driver"),
        ({"wrong": "Segmentation fault"}, "gpu", "wrong", "nvidia-smi"),
        ({**H100, "count": 0}, "gpu", "missing", "driver"),
        ({**H100, "runtime": 13000, "driver": 12080}, "cuda", "wrong", "runner-cuda12"),
    ],
)  # fmt: skip
def test_each_broken_piece_of_the_gpu_stack_is_named_with_its_fix(
    probe: dict, name: str, state: str, fix: str
) -> None:
    bad = [c for c in gpu_checks(probe) if c.state != "ok"]
    assert [(c.name, c.state) for c in bad] == [(name, state)]
    assert fix in bad[0].fix and fix in bad[0].line
    with pytest.raises(HostError, match=f"cannot run the CUDA suite 'k': {name} {state}"):
        require_gpu("k", gpu=lambda: probe)
    require_gpu("k", gpu=lambda: H100)  # a working stack raises nothing


def test_the_gpu_is_probed_in_a_child_that_can_fail_alone(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n")
    fake.chmod(0o755)
    assert host.probe_gpu(str(fake)) == {"wrong": "Segmentation fault"}
    assert "missing" in host.probe_gpu(sys.executable) or "count" in host.probe_gpu()


def test_git_and_disk_are_required_the_tools_optional(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELWATCH_NCU", str(tmp_path / "no-ncu"))
    checks = agent_checks("cuda", tmp_path, gpu=lambda: H100, everything=True)
    by = {c.name: c for c in checks}
    assert by["ncu"].state == "missing" and not by["ncu"].required and by["ncu"].ok
    assert not by["counters"].required
    assert can_run(checks)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    checks = agent_checks("cpu", tmp_path)
    assert [c.name for c in checks] == ["numpy", "git", "disk"]  # a CPU host needs no GPU
    assert not can_run(checks)
    full = host.disk_check(tmp_path, minimum=1 << 62)
    assert full.state == "wrong" and "GiB free under" in full.detail


def test_counters_restricted_to_admins_are_named_with_the_fix(tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRestrictProfilingToAdminUsers: 1\n")
    user = host.counters_check(params, euid=1000)
    assert user.state == "wrong" and "ERR_NVGPUCTRPERM" in user.detail
    assert "NVreg_RestrictProfilingToAdminUsers=0" in user.fix and not user.required
    assert host.counters_check(params, euid=0).state == "ok"  # root may
    params.write_text("RestrictProfilingToAdminUsers: 0\n")
    assert host.counters_check(params, euid=1000).detail.endswith("(for every user)")
    unknown = host.counters_check(tmp_path / "absent", euid=1000)
    assert unknown.state == "missing" and unknown.ok  # optional: a host still runs without


def test_doctor_says_one_line_per_check_and_exits_1_when_the_host_cannot_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(host, "probe_gpu", lambda: {"missing": "No module named 'cupy'"})
    assert cli.main(["doctor", "--cache", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ok      numpy        importable"
    assert out[1].startswith("missing cupy") and "kernelwatch[runner-cuda13]" in out[1]
    assert out[-1] == "this host cannot run jobs: fix the above"
    monkeypatch.setattr(host, "probe_gpu", lambda: H100)
    assert cli.main(["doctor", "--cache", str(tmp_path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["ready"] and answer["checks"][1] == {
        "name": "cupy", "state": "ok", "detail": "CuPy 14.2.0 (CUDA runtime 13.0)", "fix": "",
        "required": True,
    }  # fmt: skip


def test_doctor_checks_the_service_and_the_token(
    server: LiveServer, engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    token = make_runner(engine, "h100-a", {"gpu": "h100"})
    assert cli.main(["doctor", "--cpu", "--cache", str(tmp_path), "--server", server.url,
                     "--token", token]) == 0  # fmt: skip
    assert "ok      token        taken: runner h100-a" in capsys.readouterr().out
    assert cli.main(["doctor", "--cpu", "--cache", str(tmp_path), "--server", server.url,
                     "--token", "kwr_wrong"]) == 1  # fmt: skip
    assert "wrong   token        the service answered 401" in capsys.readouterr().out
    assert cli.main(["doctor", "--cpu", "--server", "http://127.0.0.1:9"]) == 1
    assert capsys.readouterr().out.startswith("ok      numpy")


def test_an_agent_on_a_host_without_git_refuses_before_any_claim(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    # The service is told once, best effort, never asked for work: a closed port would be
    # retried forever otherwise. (Without a GPU, tests/runner/agent/test_startup.py.)
    code = cli.main(["agent", "--cpu", "--server", "http://127.0.0.1:9", "--token", "kwr_x",
                     "--cache", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "kernelwatch-runner agent: missing git" in err
    assert "the service was not told (" in err
    assert "this host cannot run jobs" in err and "Traceback" not in err


def test_a_refusing_agent_marks_its_runner_unhealthy_until_one_starts_healthy(
    server: LiveServer,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from tests.service.store.jobs.test_queue import make_jobs

    token = make_runner(engine, "h100-a", {"gpu": "h100"})
    make_jobs(engine, 1, {"gpu": "h100"})
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    code = cli.main(["agent", "--cpu", "--server", server.url, "--token", token, "--cache",
                     str(tmp_path)])  # fmt: skip
    assert code == 2
    assert "the service shows this runner as unhealthy" in capsys.readouterr().err
    with server.client(token) as client:
        runner = client.get("/api/v1/runners").json()[0]
        assert not runner["healthy"] and runner["unhealthy_since"]
        assert "missing git" in runner["unhealthy_reason"]
        refused = client.post("/api/v1/jobs/claim")  # an older agent that claims regardless
        assert refused.status_code == 409 and "cannot run jobs" in refused.json()["detail"]
        page = client.get("/")
        assert "unhealthy since" in page.text and "missing git" in page.text
        # an agent that starts on a healthy host registers: the mark goes, jobs come again
        client.post("/api/v1/runners/register", json={"host": "gpu-host-01"})
        assert client.get("/api/v1/runners").json()[0]["healthy"]
        assert client.post("/api/v1/jobs/claim").status_code == 200


def test_list_and_every_help_work_without_cupy() -> None:
    """This machine has no CuPy: listing a CUDA suite needs none, and says nothing of it."""
    listed = subprocess.run([sys.executable, "-m", "runner.cli", "list", "--repo", str(ROOT),
                             "--json"], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) > 10 and "Traceback" not in listed.stderr
    for command in ("run", "agent", "list", "doctor", "parse-ncu"):
        helped = subprocess.run([sys.executable, "-m", "runner.cli", command, "--help"],
                                capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        assert helped.returncode == 0 and "usage:" in helped.stdout, command


def test_the_runner_host_page_says_what_the_code_does() -> None:
    """docs/runner-host.md: its commands parse with the real CLIs, its extras exist, and its
    systemd units keep down only on the exit codes that need a person: a refused runner, and an
    agent started for suites its host cannot run."""
    import shlex
    import tomllib

    from runner.agent.exits import EXIT_CONFIG, EXIT_HOST, EXIT_REFUSED
    from service.cli import build_parser as service_parser

    page = (ROOT / "docs" / "runner-host.md").read_text()
    lines = [line.strip().removeprefix("ExecStart=/opt/kernelwatch/bin/")
             for line in page.replace("\\\n", " ").splitlines()]  # fmt: skip
    commands = [line for line in lines if line.startswith(("kernelwatch-runner ", "kernelwatch "))]
    assert len(commands) >= 5
    for line in commands:
        words = shlex.split(line.split("#")[0])
        parser = cli.build_parser() if words[0] == "kernelwatch-runner" else service_parser()
        parser.parse_args(words[1:])  # SystemExit(2) on an option that does not exist
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in ("runner-cuda12", "runner-cuda13"):
        assert extra in page and extra in extras["optional-dependencies"]
    prevented = [line.partition("=")[2].split() for line in lines
                 if line.startswith("RestartPreventExitStatus=")]  # fmt: skip
    assert prevented == [[str(EXIT_REFUSED), str(EXIT_CONFIG)]] * 2  # both units; 2 and 3 restart
    said = page.lower()
    for code in (EXIT_REFUSED, 2, EXIT_HOST, EXIT_CONFIG):
        assert f"exit code {code}" in said or f"exit with code {code}" in said, code
    assert f"`{cli.CPU_ENV}=1`" in page and "kernelwatch-runner agent --cpu" in page
    assert "ExecStart=/opt/kernelwatch/bin/kernelwatch-runner agent" in page


def test_a_host_with_cupy_and_no_driver_is_told_so_in_words() -> None:
    (check,) = gpu_checks({"wrong": "CUDARuntimeError: cudaErrorInsufficientDriver: ..."})
    assert check.detail == ("no NVIDIA driver, or one older than CuPy's CUDA runtime "
                            "(cudaErrorInsufficientDriver)")  # fmt: skip

"""runner.cli: the command line's own decisions, made before any suite runs. The service URL an
agent or doctor takes (http(s), a host, a port that can exist; the trailing slash dropped),
the environment that turns --cpu on and gives the token, the one-line usage errors of `agent`
and `run` (exit 2, `kernelwatch-runner COMMAND: error: ...`), a `list` whose default selects
nothing, `parse-ncu` of a folder, and doctor's exit code following its verdict. Each command is
run in-process through `main`; the per-command files beside this one (test_cli_list.py,
test_cli_parse_ncu.py, test_cli_server.py) run the installed script."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from runner import cli
from tests.runner.gitrepo import CPU_SUITE


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        (" https://kw.example.com/ ", "https://kw.example.com"),
        ("http://10.0.0.5:8000", "http://10.0.0.5:8000"),
        ("http://kw.example.com:65535/kernelwatch/", "http://kw.example.com:65535/kernelwatch"),
    ],
)
def test_a_service_url_is_taken_without_its_trailing_slash(given: str, taken: str) -> None:
    assert cli.server_url(given) == taken


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("http://kw.example.com:port", "'http://kw.example.com:port': the port must be 1 to 65535"),
        ("http://127.0.0.1:0", "'http://127.0.0.1:0': the port must be 1 to 65535"),
        ("http://127.0.0.1:99999", "'http://127.0.0.1:99999': the port must be 1 to 65535"),
        ("https://:8443", "'https://:8443' is no service URL: give http(s)://HOST[:PORT]"),
        ("kw.example.com", "'kw.example.com' is no service URL"),
    ],
)
def test_a_service_url_that_cannot_work_is_an_argument_error(given: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        cli.server_url(given)
    assert str(caught.value).startswith(says)


@pytest.mark.parametrize(
    ("value", "on"),
    [
        ("1", True),
        (" TRUE ", True),
        ("yes", True),
        ("On", True),
        ("0", False),
        ("", False),
        ("no", False),
        ("2", False),
    ],
)
def test_the_cpu_variable_turns_cpu_on_for_agent_and_doctor(
    value: str, on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read when the parser is built: a systemd unit's EnvironmentFile sets it, not a flag."""
    monkeypatch.setenv(cli.CPU_ENV, value)
    parser = cli.build_parser()
    agent = parser.parse_args(["agent", "--server", "http://kw:8000", "--token", "t"])
    assert agent.cpu is on
    assert parser.parse_args(["doctor"]).cpu is on


def test_the_token_comes_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERNELWATCH_RUNNER_TOKEN", "kwr_from_env")
    parser = cli.build_parser()
    assert parser.parse_args(["agent", "--server", "http://kw"]).token == "kwr_from_env"
    given = parser.parse_args(["agent", "--server", "http://kw", "--token", "kwr_given"])
    assert given.token == "kwr_given"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([], "--token (or $KERNELWATCH_RUNNER_TOKEN) is required"),
        (["--token", "t", "--labels", "gpu=h100,sm90"], "label 'sm90' is not key=value"),
        (["--token", "t", "--labels", "=h100"], "label '=h100' is not key=value"),
    ],
)
def test_an_agent_without_a_token_or_with_a_bad_label_stops_in_one_line(
    extra: list[str],
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before the GPU is probed or the service called: the server named here does not exist."""
    monkeypatch.delenv("KERNELWATCH_RUNNER_TOKEN", raising=False)
    code = cli.main(["agent", "--server", "http://kw.invalid", "--cpu", *extra])
    assert code == 2
    assert capsys.readouterr().err == f"kernelwatch-runner agent: error: {says}\n"


def test_run_refuses_an_only_that_is_no_regular_expression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(
        [
            "run",
            "--repo",
            str(tmp_path),
            "--commit",
            "HEAD",
            "--only",
            "gemm[",
            "--cache",
            str(tmp_path / "cache"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelwatch-runner run: error: --only is not a regular expression: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "cache").exists()  # refused before any clone


def test_list_refuses_a_default_that_selects_no_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = shutil.copytree(CPU_SUITE, tmp_path / "suite")
    toml = suite / "kernelwatch.toml"
    toml.write_text(toml.read_text().replace('default = ["fast"]', 'default = ["nightly"]'))
    assert cli.main(["list", "--repo", str(suite)]) == 2
    assert capsys.readouterr().err == (
        "kernelwatch-runner list: error: [suite] default ['nightly'] selects none of the 2 "
        "workloads: name tags (fast) or regular expressions over ids\n"
    )


def test_parse_ncu_of_a_folder_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["parse-ncu", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"kernelwatch-runner parse-ncu: error: {tmp_path}: Is a directory\n"


def test_doctor_exits_1_with_the_checks_when_a_required_piece_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """git is required: with a PATH of one empty folder it is missing."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    argv = ["doctor", "--cpu", "--cache", str(tmp_path / "cache")]
    assert cli.main([*argv, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is False
    git = next(c for c in report["checks"] if c["name"] == "git")
    assert (git["state"], git["required"]) == ("missing", True)
    assert cli.main(argv) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "this host cannot run jobs: fix the above"
    assert any(line.startswith("missing git") for line in lines)

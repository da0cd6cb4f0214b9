"""kernelwatch.toml: what a repository declares, and the errors it gets when it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.suite.load import SuiteError, load_suite
from tests.runner.gitrepo import CPU_SUITE

ROOT = Path(__file__).resolve().parents[3]


def test_the_fixture_and_the_default_suite_load() -> None:
    cpu = load_suite(CPU_SUITE)
    assert (cpu.name, cpu.device, cpu.timing.processes) == ("cpu-fixture", "cpu", 3)
    assert cpu.selects({"id": "fma[n=256]", "tags": ["fast"]}, None)
    assert not cpu.selects({"id": "hang[n=8]", "tags": ["bad"]}, None)
    assert cpu.selects({"id": "hang[n=8]", "tags": ["bad"]}, "^hang")
    own = load_suite(ROOT)
    assert own.name == "kernels"
    assert own.device == "cuda"
    assert own.work_changes == "notice"  # a work change is a notice unless a suite opts in


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no [suite] table"),
        ("[suite]\nname = 'x'\n", "workloads is required"),
        ("[suite\n", "not valid TOML"),
        ("[suite]\nname='x'\nworkloads='m'\ndevice='tpu'\n", "device must be"),
        ("[suite]\nname='x'\nworkloads='m'\nbuild=3\n", "build must be"),
        ("[suite]\nname='x'\nworkloads='m'\n[timing]\nprocesess=3\n", "unknown [timing] keys"),
        (
            "[suite]\nname='x'\nworkloads='m'\n[timing]\nprocesses='many'\n",
            "[timing] processes = 'many': it must be a whole number",
        ),
        ("[suite]\nname='x'\nworkloads='m'\n[timing]\nprocesses=0\n", "processes >= 1"),
        ("[suite]\nname='x'\nworkloads='m'\nwork_changes='red'\n", "work_changes must be"),
        ("[suite]\nname='x'\nworkloads='m'\n[timing]\nmax_seconds=-1\n", "max_seconds = -1.0"),
        ("[suite]\nname='x'\nworkloads='m'\n[timing]\ntimeout_seconds=0\n", "must be a number > 0"),
        ("[suite]\nname='x'\nworkloads='m'\n[timing]\nwarmup_seconds=-0.5\n", ">= 0"),
    ],
)
def test_bad_suite_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "kernelwatch.toml").write_text(text)
    with pytest.raises(SuiteError, match=message.replace("[", r"\[")):
        load_suite(tmp_path)


def test_a_missing_suite_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"kernelwatch\.toml does not exist"):
        load_suite(tmp_path)

"""The `kernelwatch` entry point (service.launch): one line naming what to install on a host
without the service's dependencies, and the service's own command where they are."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from service import launch

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def distribution(requirement: str) -> str:
    """`psycopg[binary]>=3.1` -> `psycopg`."""
    for stop in "[<>=!~; ":
        requirement = requirement.split(stop)[0]
    return requirement.lower().replace("_", "-")


def test_the_modules_it_checks_are_what_the_service_extra_brings() -> None:
    service = {distribution(r) for r in PYPROJECT["optional-dependencies"]["service"]}
    runner = {distribution(r) for r in PYPROJECT["dependencies"]}
    checked = {name.replace("_", "-") for name in launch.SERVICE_MODULES}
    assert checked <= service, checked - service
    assert not checked & runner
    assert PYPROJECT["scripts"]["kernelwatch"] == "service.launch:main"


def test_a_host_without_them_is_told_what_to_install(tmp_path: Path) -> None:
    """Python without site-packages: as a GPU host that has only the runner's dependencies (and
    here not even those), where importing the service would end in a traceback."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from service.launch import main; "
        "sys.exit(main(['db', 'upgrade']))"
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kernelwatch: the service's dependencies are not installed here (fastapi, uvicorn, "
        "sqlalchemy, alembic, pydantic, pydantic_settings, scipy, ruptures, plotly, jinja2, "
        "orjson missing): pip install 'kernelwatch[service]'; a GPU host needs only "
        "kernelwatch-runner (kernelwatch[runner-cuda13] or [runner-cuda12])\n"
    )
    assert list(tmp_path.iterdir()) == []  # no database made


def test_one_missing_module_is_named_and_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A None entry in sys.modules is how Python itself marks a module as not importable.
    monkeypatch.setitem(sys.modules, "ruptures", None)
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("KERNELWATCH_DATABASE_URL", raising=False)
    assert launch.missing_modules() == ["ruptures"]
    assert launch.main(["db", "upgrade"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "are not installed here (ruptures missing): pip install" in err
    assert not (tmp_path / "data").exists()


def test_with_them_it_runs_the_service_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("KERNELWATCH_DATABASE_URL", raising=False)
    assert launch.missing_modules() == []
    assert launch.main(["db", "upgrade"]) == 0
    database = (tmp_path / "data" / "kernelwatch.db").resolve()
    assert capsys.readouterr().out == f"database at sqlite:///{database} is up to date\n"
    with pytest.raises(SystemExit) as exited:
        launch.main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: kernelwatch ")

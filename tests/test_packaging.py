"""Install extras: a GPU host gets the runner's dependencies only (`kernelwatch[runner-cuda13]`),
the runner works there, and `kernelwatch` says in one line what a service needs."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from service.launch import SERVICE_MODULES
from tests.test_boundaries import _imports

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SERVICE_ONLY = {
    "fastapi", "uvicorn", "httptools", "uvloop", "sqlalchemy", "alembic", "pydantic",
    "pydantic-settings", "psycopg", "ruptures", "scipy", "plotly", "jinja2", "orjson",
}  # fmt: skip
# The distribution that brings each import name the runner and the default suite use.
DISTRIBUTION = {"numpy": "numpy", "httpx": "httpx", "rich": "rich", "cupti": "cupti-python"}


def names(requirements: list[str]) -> set[str]:
    """Distribution names of PEP 508 requirements (no extras, versions or markers)."""
    out = set()
    for requirement in requirements:
        name = requirement.split(";")[0]
        for stop in "[<>=!~ ":
            name = name.split(stop)[0]
        out.add(name.strip().lower())
    return out


@pytest.mark.parametrize("extra", ["runner-cuda12", "runner-cuda13"])
def test_a_gpu_host_install_has_the_runners_dependencies_only(extra: str) -> None:
    installed = names(PROJECT["dependencies"]) | names(PROJECT["optional-dependencies"][extra])
    assert not installed & SERVICE_ONLY
    major = extra[-2:]
    assert {f"cupy-cuda{major}x", "cupti-python"} <= installed
    # every third-party import of the runner and the default suite comes with it
    used = set()
    for package in ("runner", "kernels"):
        for path in (ROOT / package).rglob("*.py"):
            used |= _imports(path) - set(sys.stdlib_module_names) - {"runner", "kernels"}
    wanted = {DISTRIBUTION.get(name, f"cupy-cuda{major}x" if name == "cupy" else name)
              for name in used}  # fmt: skip
    assert wanted <= installed, sorted(wanted - installed)


def test_the_service_extra_is_what_the_service_imports() -> None:
    service = names(PROJECT["optional-dependencies"]["service"])
    assert service >= SERVICE_ONLY
    assert "kernelwatch[service]" in PROJECT["optional-dependencies"]["dev"]
    assert PROJECT["scripts"]["kernelwatch"] == "service.launch:main"


def without_the_service(code: str) -> subprocess.CompletedProcess[str]:
    """Python with every module of the service's extra made unimportable (as if not installed)."""
    blocked = [*SERVICE_MODULES, "psycopg", "httptools", "uvloop"]
    prelude = f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip


def test_the_runner_works_without_the_services_packages(tmp_path: Path) -> None:
    listed = without_the_service(
        f"from runner import cli\nsys.exit(cli.main(['list', '--repo', {str(ROOT)!r}, '--json']))"
    )
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) > 10
    doctor = without_the_service(
        "from runner import cli\n"
        f"sys.exit(cli.main(['doctor', '--cpu', '--json', '--cache', {str(tmp_path)!r}]))"
    )
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stderr
    assert json.loads(doctor.stdout)["checks"]
    modules = without_the_service(
        "import runner.agent.loop, runner.run.pipeline, runner.agent.job, runner.agent.client\n"
        "import runner.host.checks\n"
        "print('ok')"
    )
    assert modules.stdout.strip() == "ok", modules.stderr


def test_kernelwatch_without_the_services_packages_says_what_to_install() -> None:
    answer = without_the_service("from service.launch import main\nsys.exit(main(['serve']))")
    assert answer.returncode == 2
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'kernelwatch[service]'" in lines[0]
    assert "fastapi" in lines[0] and "Traceback" not in answer.stderr


def test_kernelwatch_with_them_runs_the_service_cli() -> None:
    helped = subprocess.run([sys.executable, "-m", "service.launch", "--help"],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert helped.returncode == 0 and "serve" in helped.stdout

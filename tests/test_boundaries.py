"""The package boundaries of docs/architecture.md: runner and kernels must run on a bare GPU
host."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_THIRD_PARTY = {"numpy", "httpx", "cupy", "cupti", "rich", "tomllib"}
FORBIDDEN = {
    "runner": {"service", "dashboards"},
    "kernels": {"service", "dashboards", "runner"},
    "dashboards": {"service", "runner", "kernels"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_stay_inside_their_boundary(package: str) -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & FORBIDDEN[package])
        for p in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("package", ["runner", "kernels"])
def test_gpu_host_packages_need_only_the_light_dependencies(package: str) -> None:
    import sys

    ours = {"runner", "kernels"}
    for path in (ROOT / package).rglob("*.py"):
        extra = _imports(path) - set(sys.stdlib_module_names) - ALLOWED_THIRD_PARTY - ours
        assert not extra, f"{path.relative_to(ROOT)} imports {sorted(extra)}"

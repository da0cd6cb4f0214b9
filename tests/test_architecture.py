"""No import circles among our own modules, nor between our packages (docs/architecture.md).

The import graph is read from the source (every import statement, those inside functions too:
they tie two modules just the same), not from an import at run time. A circle of modules fails
the test; so does a circle of packages, but for the one that issue 20's restructuring removes,
which is listed below until then (and the test fails once it is gone, so that the list cannot
outlive it).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "runner", "kernels", "dashboards")
KNOWN_PACKAGE_CIRCLES = {frozenset({"service.analysis", "service.store"})}


def modules() -> dict[str, Path]:
    found = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (a package is its __init__ module: what it
    re-exports ties its importers to the modules behind it)."""

    def owner(dotted: str) -> str | None:
        while dotted:
            if dotted in found:
                return dotted
            dotted = dotted.rpartition(".")[0]
        return None

    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, up node.level - 1 steps
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                # `from pkg import sub` is the module pkg.sub; `from pkg import Name` is pkg
                # (its __init__ re-exports Name); every submodule runs its package's __init__
                # first, which alone is no tie.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in found else base
                           for a in node.names]  # fmt: skip
            else:
                continue
            graph[name] |= {t for t in map(owner, targets) if t and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of more than one node (Kosaraju: finish order, then the
    reversed graph in reverse finish order)."""
    order: list[str] = []
    seen: set[str] = set()
    for start in graph:
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, nexts = stack[-1]
            step = next((n for n in nexts if n not in seen), None)
            if step is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(step)
                stack.append((step, iter(sorted(graph.get(step, ())))))
    reverse: dict[str, set[str]] = defaultdict(set)
    for node, targets in graph.items():
        for target in targets:
            reverse[target].add(node)
    out, placed = [], set()
    for root in reversed(order):
        if root in placed:
            continue
        group, todo = set(), [root]
        while todo:
            node = todo.pop()
            if node in placed:
                continue
            placed.add(node)
            group.add(node)
            todo.extend(reverse[node] - placed)
        if len(group) > 1:
            out.append(frozenset(group))
    return out


def package_of(module: str, found: dict[str, Path]) -> str:
    """The package a module belongs to, two levels at most: service.store.jobs and
    service.store (its __init__) -> service.store; service.api.routes.jobs -> service.api;
    service.cli -> service; runner.agent -> runner."""
    package = module if found[module].name == "__init__.py" else module.rpartition(".")[0]
    return ".".join(package.split(".")[:2])


def test_the_graph_sees_imports_of_every_kind() -> None:
    graph = import_graph(modules())
    assert "service.store.jobs" in graph["service.api.routes.jobs"]  # from x import y as z
    assert "runner.profile" in graph["runner.pipeline"]  # inside a function
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_module_imports_itself_through_others() -> None:
    assert circles(import_graph(modules())) == []


def test_no_package_circle_but_the_one_issue_20_removes() -> None:
    found = modules()
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph(found).items():
        own = package_of(module, found)
        packages[own] |= {package_of(t, found) for t in targets} - {own}
    found = set(circles(dict(packages)))
    assert found - KNOWN_PACKAGE_CIRCLES == set(), "a new circle of packages"
    assert KNOWN_PACKAGE_CIRCLES - found == set(), "gone: take it off KNOWN_PACKAGE_CIRCLES"

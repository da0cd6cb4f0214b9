"""No import circles among our own modules, nor between our packages, and each package of the
service and the runner imports only what docs/architecture.md allows it.

The import graph is read from the source (every import statement, those inside functions too:
they tie two modules just the same), not from an import at run time.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "runner", "kernels", "dashboards")
# What each package may import of ours (docs/architecture.md draws it): the service's numerics
# nothing, its store no analysis, nothing below the routes a route or a page; the runner's below.
ALLOWED = {
    "service.core": set(),
    "service.models": set(),
    "service.analysis": set(),
    "service.schemas": {"service.core", "service.models"},
    "service.store": {"service.core", "service.models", "service.schemas"},
    "service.evaluation": {
        "service.analysis", "service.core", "service.models", "service.schemas", "service.store",
    },
    "service.runs": {
        "service.core", "service.evaluation", "service.integrations", "service.models",
        "service.schemas", "service.store",
    },
    "service.integrations": {
        "dashboards", "service.analysis", "service.core", "service.evaluation", "service.models",
        "service.schemas", "service.store",
    },
    "service.web": {"service.core"},
    "service.pages": {
        "dashboards", "service.analysis", "service.core", "service.evaluation", "service.models",
        "service.schemas", "service.store", "service.web",
    },
    # The runner: the agent above one commit's run, above what it measures and profiles, above the
    # host and the suite; the worker process uses the measuring and profiling parts it runs.
    "runner.document": set(),
    "runner.host": set(),
    "runner.suite": set(),
    "runner.measure": {"runner.document", "runner.suite"},
    "runner.profile": {"runner.document", "runner.host", "runner.measure"},
    "runner.worker": {"runner.host", "runner.measure", "runner.profile", "runner.suite"},
    "runner.run": {"runner.host", "runner.measure", "runner.profile", "runner.suite"},
    "runner.agent": {"runner.host", "runner.measure", "runner.run"},
}  # fmt: skip


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
    """The package a module belongs to, two levels at most: service.store.jobs.queue and
    service.store (its __init__) -> service.store; service.api.routes.jobs -> service.api;
    service.cli -> service; runner.cli -> runner; runner.agent.loop -> runner.agent."""
    package = module if found[module].name == "__init__.py" else module.rpartition(".")[0]
    return ".".join(package.split(".")[:2])


def test_the_graph_sees_imports_of_every_kind() -> None:
    graph = import_graph(modules())
    assert "service.store.jobs.queue" in graph["service.api.routes.jobs"]  # from x import y as z
    assert "runner.profile.capture" in graph["runner.run.pipeline"]  # inside a function
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_module_imports_itself_through_others() -> None:
    assert circles(import_graph(modules())) == []


def package_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph(found).items():
        own = package_of(module, found)
        packages[own] |= {package_of(t, found) for t in targets} - {own}
    return dict(packages)


def test_no_package_imports_itself_through_others() -> None:
    assert circles(package_graph(modules())) == []


def test_each_package_imports_only_what_it_may() -> None:
    graph = package_graph(modules())
    assert set(ALLOWED) <= set(graph), "a package of ALLOWED is gone: take it off"
    wrong = {p: sorted(graph[p] - allowed) for p, allowed in ALLOWED.items() if graph[p] - allowed}
    assert wrong == {}


# The domains of the two middle floors (docs/architecture.md, "One room per concept on each
# floor") and which others of their floor each may use: one way only.
DOMAINS = {
    "service.store.history": {"service.store.verdicts"},
    "service.store.jobs": set(),
    "service.store.verdicts": set(),
    "service.store.alerts": {"service.store.history"},
    "service.store.reads": {"service.store.alerts"},
    "service.evaluation.verdicts": set(),
    "service.evaluation.alerts": {"service.evaluation.verdicts"},
    "service.evaluation.reads": set(),
}


def domain_of(module: str) -> str | None:
    """The domain a module of the middle floors belongs to (three levels); None elsewhere."""
    parts = module.split(".")
    found = ".".join(parts[:3])
    return found if found in DOMAINS else None


def test_each_domain_of_a_floor_uses_only_the_ones_it_may() -> None:
    found = modules()
    wrong: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph(found).items():
        own = domain_of(module)
        if own is None:
            continue
        floor = own.rpartition(".")[0]
        for target in targets:
            other = domain_of(target)
            if other and other != own and other.startswith(floor) and other not in DOMAINS[own]:
                wrong[own].add(f"{module} -> {target}")
    assert dict(wrong) == {}
    assert set(DOMAINS) == {
        ".".join(m.split(".")[:3]) for m, path in found.items()
        if m.startswith(("service.store.", "service.evaluation.")) and path.name == "__init__.py"
    }, "a domain package of the floors is not in DOMAINS (or one of DOMAINS is gone)"  # fmt: skip


# The packages that own the ORM's use: the store's queries and writes, analysis' database side,
# the models and the engine. Nowhere else is a session asked for rows or handed some, nor a
# model's attribute written (the routes, pages, runs, integrations, CLI and demo ask the store).
ORM_OWNERS = ("service.store", "service.evaluation", "service.models", "service.core")
SESSION_CALLS = {"add", "add_all", "get", "execute", "delete", "merge", "scalar", "scalars",
                 "flush"}  # fmt: skip
# What a model's row is called where it is held (a heuristic: the names our code gives them).
MODEL_NAMES = {"runner", "job", "run", "alert", "repo", "repository", "commit", "series",
               "result", "verdict", "delivery", "pr", "row"}  # fmt: skip


def orm_use(path: Path) -> list[str]:
    """Where a module calls a session's query or write methods, or writes a model's attribute."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            is_session = isinstance(receiver, ast.Name) and receiver.id == "session"
            if is_session and node.func.attr in SESSION_CALLS:
                out.append(f"{node.lineno}: session.{node.func.attr}(...)")
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])  # fmt: skip
        for target in targets:
            for each in target.elts if isinstance(target, ast.Tuple) else [target]:
                if (isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name)
                        and each.value.id in MODEL_NAMES):  # fmt: skip
                    out.append(f"{node.lineno}: {each.value.id}.{each.attr} = ...")
    return out


def test_the_orm_is_used_only_where_it_is_owned() -> None:
    wrong = {}
    for name, path in modules().items():
        if name.startswith("service.") and not name.startswith(ORM_OWNERS):
            found = orm_use(path)
            if found:
                wrong[name] = found
    assert wrong == {}


def test_the_orm_check_sees_reads_and_writes() -> None:
    probe = Path(__file__).with_name("_orm_probe.py")
    probe.write_text(
        "def f(session, runner, job):\n    session.add(runner)\n"
        "    runner.token_hash = 'x'\n    job.state, job.at = 'done', 1\n"
    )
    try:
        assert sorted(orm_use(probe)) == ["2: session.add(...)", "3: runner.token_hash = ...",
                                          "4: job.at = ...", "4: job.state = ..."]  # fmt: skip
    finally:
        probe.unlink()


def test_the_numerics_hold_no_sql() -> None:
    """service.analysis works on plain arrays: no SQLAlchemy, no session, no model."""
    for path in sorted((ROOT / "service" / "analysis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not [n for n in names if n.split(".")[0] == "sqlalchemy"], path.name


# The web framework stays in the layers that answer HTTP: the API, the pages and what they share.
WEB_LAYERS = ("service.api", "service.pages", "service.web")
WEB_FRAMEWORKS = ("fastapi", "starlette", "fastapi_offline", "uvicorn")


def third_party_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def web_outside_its_layers(found: dict[str, Path]) -> dict[str, list[str]]:
    return {
        name: sorted(third_party_imports(path) & set(WEB_FRAMEWORKS))
        for name, path in found.items()
        if name.startswith("service.")
        and not name.startswith(WEB_LAYERS)
        and name not in ("service.cli",)  # `kernelwatch serve` starts uvicorn
        and third_party_imports(path) & set(WEB_FRAMEWORKS)
    }


def test_the_web_framework_stays_in_the_layers_that_answer_http() -> None:
    assert web_outside_its_layers(modules()) == {}


def test_the_web_layer_test_sees_fastapi_in_the_store(tmp_path: Path) -> None:
    wrong = tmp_path / "store.py"
    wrong.write_text("from fastapi import Depends\n")
    assert web_outside_its_layers({**modules(), "service.store.wrong": wrong}) == {
        "service.store.wrong": ["fastapi"]
    }


# SQL is written by the store and by the database side of analysis (models and core hold the
# schema and the engine); nothing else builds a query.
SQL_LAYERS = ("service.store", "service.evaluation", "service.models", "service.core")
SQL_BUILDERS = {"select", "insert", "update", "delete", "func", "text", "and_", "or_", "exists"}


def sql_outside_its_layers(found: dict[str, Path]) -> set[str]:
    out = set()
    for name, path in found.items():
        if not name.startswith("service.") or name.startswith(SQL_LAYERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] == "sqlalchemy"
                and {a.name for a in node.names} & SQL_BUILDERS
            ):
                out.add(name)
    return out


def test_sql_is_written_in_the_store_and_the_analysis_database_side_only() -> None:
    assert sql_outside_its_layers(modules()) == set()


def test_the_sql_layer_test_sees_a_query_in_a_route(tmp_path: Path) -> None:
    wrong = tmp_path / "route.py"
    wrong.write_text("from sqlalchemy import select\n")
    found = sql_outside_its_layers({**modules(), "service.api.routes.wrong": wrong})
    assert found == {"service.api.routes.wrong"}


def wrong_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports that bypass a door: a route imported by anything but the app (pages and
    routes are mounted, never called), the worker process imported by the runner's CLI (it is
    started as a process)."""
    out = []
    for module, imported in graph.items():
        for target in imported:
            if target.startswith("service.api.routes.") and module != "service.api.app":
                out.append((module, target))
            if module == "runner.cli" and target.startswith("runner.worker"):
                out.append((module, target))
    return sorted(out)


def test_routes_are_mounted_by_the_app_and_the_worker_started_as_a_process() -> None:
    assert wrong_edges(import_graph(modules())) == []


def test_the_door_test_sees_a_route_imported_by_a_page() -> None:
    graph = import_graph(modules())
    graph["service.pages.commit"] = graph["service.pages.commit"] | {"service.api.routes.runs"}
    graph["runner.cli"] = graph["runner.cli"] | {"runner.worker.process"}
    assert wrong_edges(graph) == [
        ("runner.cli", "runner.worker.process"),
        ("service.pages.commit", "service.api.routes.runs"),
    ]


def test_the_contract_test_sees_a_wrong_import() -> None:
    graph = package_graph(modules())
    graph["service.store"] = graph["service.store"] | {"service.evaluation"}
    assert circles(graph) != []


# Test folders that are no package of ours: whole-history scenarios and recorded inputs.
TEST_FOLDERS_OF_THEIR_OWN = {"histories", "fixtures", "cpu_suite"}


def test_the_tests_have_the_packages_shape() -> None:
    """Each folder of tests/service/ and tests/runner/ is named after a subpackage it tests
    (histories/ holds the scenarios that span them)."""
    astray = []
    for package in ("service", "runner"):
        for folder in sorted(p for p in (ROOT / "tests" / package).iterdir() if p.is_dir()):
            if folder.name.startswith(("_", ".")) or folder.name in TEST_FOLDERS_OF_THEIR_OWN:
                continue
            if not (ROOT / package / folder.name / "__init__.py").exists():
                astray.append(f"tests/{package}/{folder.name}")
    assert astray == [], f"test folders that mirror no package: {astray}"


MIRRORED_AT_LEAST = 0.8  # issue 48: the share of product modules with a test module of their own


def unmirrored(root: Path) -> tuple[int, list[str]]:
    """How many product modules there are under `root`, and those with no test module at the
    mirrored place (runner/run/paired.py -> tests/runner/run/test_paired.py)."""
    modules, missing = 0, []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if path.name in ("__init__.py", "__main__.py") or "migrations" in relative.parts:
                continue
            modules += 1
            if not (root / "tests" / relative.parent / f"test_{path.name}").exists():
                missing.append(str(relative))
    return modules, missing


def test_product_modules_have_a_test_module_at_the_mirrored_place() -> None:
    modules, missing = unmirrored(ROOT)
    assert modules > 100
    assert (modules - len(missing)) / modules >= MIRRORED_AT_LEAST, missing


def test_the_mirror_check_sees_a_module_without_its_test(tmp_path: Path) -> None:
    for package in PACKAGES:
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "sub" / "__init__.py").write_text("")
    (tmp_path / "runner" / "sub" / "tested.py").write_text("")
    (tmp_path / "runner" / "sub" / "untested.py").write_text("")
    (tmp_path / "tests" / "runner" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "runner" / "sub" / "test_tested.py").write_text("")
    (tmp_path / "tests" / "runner" / "sub" / "test_untested.py.orig").write_text("")
    assert unmirrored(tmp_path) == (2, ["runner/sub/untested.py"])


def test_the_er_diagram_names_every_table_and_reference() -> None:
    """docs/architecture.md's diagram of the models stays what the models are."""
    import re

    from service.models import Base

    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text[text.index("erDiagram") : text.index("```", text.index("erDiagram"))]
    drawn = set(re.findall(r"^\s+(\w+) \|\|--o\{ (\w+) : \"?([\w, ]+)\"?$", diagram, re.M))
    pairs = {(a, b, col.strip()) for a, b, cols in drawn for col in cols.split(",")}
    wanted = {
        (fk.column.table.name, table.name, fk.parent.name)
        for table in Base.metadata.sorted_tables
        for fk in table.foreign_keys
    }
    assert pairs == wanted
    named = set(re.findall(r"\b(\w+)\b", diagram))
    assert {t.name for t in Base.metadata.sorted_tables} <= named

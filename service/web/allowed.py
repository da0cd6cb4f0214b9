"""The methods a path takes, from every route whose path matches it: Starlette's own 405 names
only the first route whose path matched (`/api/v1/jobs` answered `Allow: POST` though it lists
jobs with GET too), and it answers OPTIONS with that 405 as well."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from starlette.routing import compile_path


def _leaves(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(full path, route) of every route, routers included in others walked into."""
    for route in routes:
        inner = getattr(route, "original_router", None)  # a router included in the app
        if inner is not None:
            context = getattr(route, "include_context", None)
            yield from _leaves(inner.routes, prefix + (getattr(context, "prefix", "") or ""))
        elif getattr(route, "path", None) is not None:
            yield prefix + route.path, route


def allowed_methods(routes: list[Any], path: str) -> list[str]:
    """Every method of every route whose path matches `path`, and OPTIONS, sorted."""
    methods = {"OPTIONS"}
    for full, route in _leaves(routes):
        regex, _, _ = compile_path(full)
        if regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)

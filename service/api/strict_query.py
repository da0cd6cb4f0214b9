"""An unknown query parameter is a 400, not silently ignored: `?stat=open` for `?state=open`
would otherwise answer every alert, and a reader would take it for the filtered list."""

from __future__ import annotations

from fastapi import Request

from service.core.errors import InvalidReference

_KNOWN: dict[int, frozenset[str]] = {}  # by the route's id: routes live as long as the app


def _known(route: object) -> frozenset[str]:
    """The query parameters the route's endpoint and its dependencies declare."""
    if id(route) in _KNOWN:
        return _KNOWN[id(route)]
    names: set[str] = set()
    stack = [getattr(route, "dependant", None)]
    while stack:
        dependant = stack.pop()
        if dependant is None:
            continue
        names.update(f.alias for f in dependant.query_params)
        stack.extend(dependant.dependencies)
    _KNOWN[id(route)] = frozenset(names)
    return _KNOWN[id(route)]


async def refuse_unknown_query(request: Request) -> None:
    """400 naming the first query parameter the matched route does not take."""
    route = request.scope.get("route")
    if route is None or getattr(route, "dependant", None) is None:
        return
    known = _known(route)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) if known else "none"
        raise InvalidReference(
            f"unknown query parameter {unknown[0]!r}; {request.url.path} takes: {takes}"
        )

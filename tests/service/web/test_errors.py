"""One error family: what a request cannot do is a domain error everywhere, the edge included;
HttpError carries only what HTTP alone knows, and refuses a domain error's status."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from service.web.errors import PROTOCOL_STATUSES, HttpError

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500])
def test_a_domain_errors_status_is_refused(status: int) -> None:
    with pytest.raises(ValueError, match="domain error"):
        HttpError(status, "no such thing")


def test_what_only_http_knows_keeps_its_status_and_headers() -> None:
    refused = HttpError(405, "claim a job with POST", headers={"Allow": "POST"})
    assert (refused.status, refused.headers) == (405, {"Allow": "POST"})


def test_no_module_raises_an_http_error_of_a_domain_status() -> None:
    """Read from the source: every HttpError(...) names a protocol status as its first argument."""
    wrong = []
    for path in sorted((ROOT / "service").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            called = isinstance(node, ast.Call) and getattr(node.func, "id", None) == "HttpError"
            if not called:
                continue
            first = node.args[0] if node.args else None
            if not isinstance(first, ast.Constant) or first.value not in PROTOCOL_STATUSES:
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert wrong == []

"""Which clone URLs reach a runner's git (service.core.clone_urls)."""

from __future__ import annotations

import pytest

from service.core import clone_urls
from service.core.settings import Settings


@pytest.mark.parametrize(("url", "transport"), [("fd::17", "fd"), ("foo::bar", "foo")])
def test_any_git_transport_is_refused_even_where_local_paths_are_allowed(
    url: str, transport: str
) -> None:
    """git reads `<transport>::<address>` as a remote helper, never as a path, whatever its name."""
    local = Settings(allow_local_clone_urls=True)
    assert f"uses {transport!r}" in (clone_urls.refusal(url, local) or "")
    assert clone_urls.transport(url) == transport
    assert clone_urls.refusal("/srv/repo.git", local) is None  # paths themselves do pass here

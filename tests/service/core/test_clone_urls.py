"""Which clone URLs reach a runner's git (service.core.clone_urls)."""

from __future__ import annotations

import re

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


def test_the_described_pattern_takes_what_is_accepted_in_any_case() -> None:
    """The OpenAPI description's pattern and the refusal agree on a scheme written in capitals
    (the refusal reads schemes in any case; a JSON Schema pattern has no flag for it)."""
    settings = Settings()
    described = clone_urls.pattern(settings)
    assert described is not None
    for url in ("HTTPS://example.com/r.git", "https://example.com/r.git", "Ssh://git@h/r.git"):
        assert clone_urls.refusal(url, settings) is None and re.search(described, url), url
    for url in ("FTP://example.com/r", "git+ssh://h/r"):
        assert clone_urls.refusal(url, settings) is not None, url
        assert not re.search(described, url), url

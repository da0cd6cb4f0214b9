"""Which clone URLs a deployment hands to its runners' git: the schemes it names (https and ssh
by default, `KERNELWATCH_CLONE_URL_SCHEMES`), and local paths only where
`KERNELWATCH_ALLOW_LOCAL_CLONE_URLS` says so. Anything else (`ext::sh -c ...`, which git runs
as a command, `file:///etc`, a path) is refused where it enters: a push, a pull request, a job
queued by hand. The runner restricts git's protocols the same way (runner.suite.checkout)."""

from __future__ import annotations

import re

from service.core.errors import Unprocessable
from service.core.settings import Settings

# scp-like ssh (`git@github.com:owner/repo.git`): user@host:path, the path not starting "//".
_SCP_LIKE = re.compile(r"^[\w.+-]+@[\w.-]+:(?!//)")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
LOCAL = "local"


def transport(url: str) -> str:
    """What git would use for `url`: its scheme (lowercase), "ssh" for scp-like syntax, "ext"
    (or another) for git's `<transport>::<address>` form, "local" for a path or file:// URL."""
    if match := _SCHEME.match(url):
        scheme = match.group(1).lower()
        return LOCAL if scheme == "file" else scheme
    if "::" in url.split("/", 1)[0]:
        return url.split("::", 1)[0].lower() or "ext"
    if _SCP_LIKE.match(url):
        return "ssh"
    return LOCAL


def refusal(url: str | None, settings: Settings) -> str | None:
    """Why `url` may not be handed to a runner's git, or None where it may (or there is none)."""
    if not url:
        return None
    kind = transport(url)
    allowed = {s.strip().lower() for s in settings.clone_url_schemes}
    if kind == LOCAL:
        if settings.allow_local_clone_urls:
            return None
        return (
            f"clone URL {url!r} is a local path; runners clone only "
            f"{_listing(allowed)} URLs here (KERNELWATCH_ALLOW_LOCAL_CLONE_URLS=1 allows paths)"
        )
    if kind in allowed:
        return None
    return (
        f"clone URL {url!r} uses {kind!r}; runners clone only {_listing(allowed)} URLs here "
        "(KERNELWATCH_CLONE_URL_SCHEMES names them)"
    )


def _any_case(scheme: str) -> str:
    """'git+ssh' as '[gG][iI][tT]\\+[sS][sS][hH]'."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in scheme)


def pattern(settings: Settings) -> str | None:
    """A regular expression of the clone URLs `refusal` lets pass (or none left empty), for the
    OpenAPI description; None where local paths are allowed (then nearly any text is a path)."""
    if settings.allow_local_clone_urls:
        return None
    allowed = sorted({s.strip().lower() for s in settings.clone_url_schemes} - {"file"})
    options = ["^$"]
    # A scheme in any case, as `refusal` reads it (JSON Schema's patterns have no flags).
    if schemes := [_any_case(s) for s in allowed if s != LOCAL]:
        options.append(f"^(?:{'|'.join(schemes)})://")
    if "ssh" in allowed:
        options.append(_SCP_LIKE.pattern)
    return "|".join(options)


def check(url: str | None, settings: Settings) -> None:
    """Refuse (422) a clone URL that `refusal` refuses."""
    if why := refusal(url, settings):
        raise Unprocessable(why)


def _listing(allowed: set[str]) -> str:
    return ", ".join(sorted(allowed)) or "no"

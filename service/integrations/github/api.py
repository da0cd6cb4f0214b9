"""GitHub's REST API as kernelwatch calls it, for statuses and comments alike: the token (sent
only in the Authorization header, never logged), one request tried again on a transport error or
a 5xx, and the words GitHub answered with."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import httpx

from service.core.settings import Settings

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
# Seconds to wait before the second and the third attempt.
RETRY_DELAYS: tuple[float, ...] = (0.5, 2.0)
_REPOSITORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")


def enabled(settings: Settings) -> bool:
    token = settings.github_token
    return token is not None and bool(token.get_secret_value().strip())


def is_github_repository(name: str) -> bool:
    return bool(_REPOSITORY.match(name)) and not name.endswith((".git", "/.", "/.."))


def attempts() -> int:
    """How many times a request is tried."""
    return len(RETRY_DELAYS) + 1


def request(
    settings: Settings,
    method: str,
    url: str,
    payload: dict[str, Any],
    *,
    what: str,
    client: httpx.Client | None = None,
) -> httpx.Response | None:
    """One call of GitHub's REST API with the service's token, tried again after each of
    RETRY_DELAYS on a transport error or a 5xx answer; the last answer (None: none came).
    `what` names the call in the log, which never shows the token."""
    secret = token(settings)
    headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {secret}",
               "X-GitHub-Api-Version": API_VERSION, "User-Agent": "kernelwatch"}  # fmt: skip
    http = client or httpx.Client(timeout=settings.github_timeout_seconds)
    answer = None
    try:
        for attempt, delay in enumerate((0.0, *RETRY_DELAYS), start=1):
            time.sleep(delay)
            try:
                answer = http.request(method, url, json=payload, headers=headers)
            except httpx.TimeoutException:
                log.warning("GitHub %s: timed out (attempt %d)", what, attempt)
                continue
            except httpx.TransportError as exc:
                log.warning("GitHub %s: %s (attempt %d)", what, redact(exc, secret), attempt)
                continue
            if answer.status_code < 500 or attempt == len(RETRY_DELAYS) + 1:
                return answer
            said = redact(message(answer), secret)
            log.warning("GitHub %s: GitHub answered %d %s (attempt %d); retrying", what,
                        answer.status_code, said, attempt)  # fmt: skip
        return answer
    finally:
        if client is None:
            http.close()


def token(settings: Settings) -> str:
    assert settings.github_token is not None
    return settings.github_token.get_secret_value().strip()


def message(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return answer.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return f"{answer.reason_phrase}: {body['message'][:200]}"
    return answer.reason_phrase


def redact(value: object, token: str) -> str:
    text = str(value)
    return text.replace(token, "***") if token else text

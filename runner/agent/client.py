"""The runner's side of the service's REST API (runner token), over httpx.

Two kinds of failure, because the agent treats them differently:

- `ServiceUnavailable`: no answer (refused connection, DNS, timeout, broken connection), a 5xx,
  or 408/425/429. Nothing is wrong with the request; try again later.
- `ServiceRefused`: any other non-2xx answer (4xx, or a redirect). Sending the same request again
  will get the same answer; `status` says why (401 token, 409 lease gone, 413/422 invalid...).

Every message names the method, the URL and the status (or that there was none) and the
service's `detail`; the token never appears in one.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

RETRYABLE_STATUSES = frozenset({408, 425, 429})
# The service takes a job's failure as a small body, 64 KiB at most (service.api.small_bodies):
# the log's tail is cut to what fits as JSON, whatever its characters (an escaped control
# character takes 6 bytes, a CJK one 3). Over it, the report was refused and the job waited
# for its lease to run out.
FAIL_LOG_BYTES = 60_000


class ServiceError(Exception):
    """A call to the service did not succeed."""

    def __init__(self, method: str, url: str, status: int | None, detail: str) -> None:
        self.method = method
        self.url = url
        self.status = status
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        if self.status is None:
            return f"{self.method} {self.url}: no answer from the service ({self.detail})"
        return f"{self.method} {self.url} answered {self.status}: {self.detail}"


class ServiceUnavailable(ServiceError):
    """Unreachable, timed out, overloaded or failing (5xx): retry later."""


class ServiceRefused(ServiceError):
    """The service answered and said no (4xx): the same request would be refused again."""


class ServiceClient:
    """A runner's calls: register, heartbeat, health, claim, lease, fail, release and post a
    run."""

    def __init__(
        self,
        server_url: str,
        token: str,
        *,
        timeout: float = 30,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = httpx.URL(server_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"server URL {server_url!r} must be http(s)://HOST[:PORT]")
        if not token:
            raise ValueError("a runner token is required")
        self.server_url = str(url).rstrip("/")
        self._http = httpx.Client(
            base_url=self.server_url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "kernelwatch-runner"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never the token
        return f"ServiceClient({self.server_url!r})"

    # -- the calls -------------------------------------------------------------------------

    def register(self, host: str, labels: dict[str, str], environment: dict[str, Any]) -> dict:
        body = {"host": host, "labels": labels, "environment": environment}
        return self._call("POST", "/api/v1/runners/register", body)

    def heartbeat(self) -> dict:
        return self._call("POST", "/api/v1/runners/heartbeat")

    def report_unhealthy(self, reason: str) -> dict:
        """Tell the service this host cannot run jobs: it gives the runner none until the
        runner registers again (an agent does at start, once its host checks pass)."""
        body = {"healthy": False, "reason": reason[-2000:]}
        return self._call("POST", "/api/v1/runners/health", body)

    def claim(self) -> dict | None:
        """`{"job", "clone_url", "attempt_token"}`, or None when nothing is queued for us."""
        return self._call("POST", "/api/v1/jobs/claim") or None

    def extend_lease(self, job_id: int, attempt_token: str) -> dict:
        return self._call("POST", f"/api/v1/jobs/{job_id}/lease", {"attempt_token": attempt_token})

    def fail(self, job_id: int, attempt_token: str, log_tail: str, retry: bool = False) -> dict:
        body = {"attempt_token": attempt_token, "log_tail": tail_within(log_tail), "retry": retry}
        return self._call("POST", f"/api/v1/jobs/{job_id}/fail", content=_json(body))

    def release(self, job_id: int, attempt_token: str) -> dict:
        body = {"attempt_token": attempt_token}
        return self._call("POST", f"/api/v1/jobs/{job_id}/release", body)

    def post_run(self, document: dict[str, Any]) -> dict:
        """Store a result document: `{"run_id", "stored", "results", "detail"}` on 201 or 200."""
        # Serialized here rather than by httpx so that a NaN reaches the service, which names
        # the offending field in its 422, instead of failing in the client without a field.
        content = json.dumps(document).encode()
        return self._call("POST", "/api/v1/runs", content=content)

    # -- plumbing --------------------------------------------------------------------------

    def _call(
        self, method: str, path: str, body: Any = None, *, content: bytes | None = None
    ) -> dict:
        url = f"{self.server_url}{path}"
        try:
            if content is not None:
                headers = {"Content-Type": "application/json"}
                answer = self._http.request(method, path, content=content, headers=headers)
            else:
                answer = self._http.request(method, path, json=body)
        except httpx.TransportError as exc:
            raise ServiceUnavailable(method, url, None, f"{type(exc).__name__}: {exc}") from exc
        status = answer.status_code
        if status == 204:
            return {}
        if 200 <= status < 300:
            try:
                parsed = answer.json()
            except ValueError as exc:
                detail = f"the body is not JSON: {answer.text[:200]!r}"
                raise ServiceUnavailable(method, url, status, detail) from exc
            return parsed if isinstance(parsed, dict) else {"answer": parsed}
        detail = _detail(answer)
        if status >= 500 or status in RETRYABLE_STATUSES:
            raise ServiceUnavailable(method, url, status, detail)
        raise ServiceRefused(method, url, status, detail)


def _detail(answer: httpx.Response) -> str:
    if answer.is_redirect:
        where = answer.headers.get("location", "?")
        return f"redirected to {where}; give that address as the server URL"
    try:
        detail = answer.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, str) and detail:
        return detail
    text = answer.text.strip()
    return text[:500] if text else answer.reason_phrase or "no detail"


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def tail_within(text: str, limit: int = FAIL_LOG_BYTES) -> str:
    """The last characters of `text` whose JSON string takes at most `limit` bytes."""
    tail = text[-limit:]
    while tail and (size := len(_json(tail))) > limit:
        keep = int(len(tail) * limit / size) - 1  # every step cuts at least one character
        tail = tail[-keep:] if keep > 0 else ""
    return tail

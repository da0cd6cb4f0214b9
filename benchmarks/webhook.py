"""A signed GitHub push delivery, as GitHub sends it, for the scripts that drive a service."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from typing import Any

import httpx


def post_push(
    url: str, secret: str, payload: dict[str, Any], event: str = "push"
) -> httpx.Response:
    """POST `payload` to `url`/webhooks/github as a push (or `event`), signed with `secret`."""
    body = json.dumps(payload).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(
        f"{url}/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={signature}",
            "Content-Type": "application/json",
        },
        timeout=30,
    )

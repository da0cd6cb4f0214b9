"""Secrets handed to runners: generated here, shown once, stored only as hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_token(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(given: str, expected: str) -> bool:
    """Constant-time comparison: timing must not tell how much of a guess was right."""
    return hmac.compare_digest(given.encode(), expected.encode())

"""Text no database can store: NUL characters and lone surrogates.

PostgreSQL refuses NUL (U+0000) in text and JSON columns, and a lone UTF-16 surrogate, which
JSON's \\ud800 escapes can carry, is not UTF-8 for either database. Requests holding them are
refused with a message that says where, instead of failing inside the database.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, model_validator

# In a JSON body these characters can only arrive escaped: \u0000, or \ud800-\udfff.
_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def may_hold_unstorable(body: bytes) -> bool:
    """Cheap test on a raw JSON body: False means no value in it needs `unstorable_text`."""
    return _SUSPECT.search(body) is not None


def _unstorable(text: str) -> str | None:
    if "\x00" in text:
        return "a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not UTF-8)"
    return None


def unstorable_text(value: Any, path: str = "$") -> str | None:
    """Where the first key or string that cannot be stored is in parsed JSON, and why."""
    if isinstance(value, str):
        why = _unstorable(value)
        return f"{path}: {why}" if why else None
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(key, str) and (why := _unstorable(key)):
                return f"{path}: a key holds {why}"
            if found := unstorable_text(sub, f"{path}.{key}"):
                return found
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            if found := unstorable_text(sub, f"{path}[{i}]"):
                return found
    return None


class StorableText(BaseModel):
    """A request body whose every string (keys included) can be stored."""

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        if found := unstorable_text(data):
            raise ValueError(f"cannot be stored: {found}")
        return data

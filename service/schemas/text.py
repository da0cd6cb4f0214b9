"""Values no database can store: NUL characters, lone surrogates and integers beyond 64 bits.

PostgreSQL refuses NUL (U+0000) in text and JSON columns, and a lone UTF-16 surrogate, which
JSON's \\ud800 escapes can carry, is not UTF-8 for either database. JSON's integers have no
bound, but the JSON columns' writer (orjson) and the integer columns stop at 64 bits. Requests
holding any of them are refused with a message that says where, instead of failing inside the
database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
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


# What the JSON columns' writer takes: a signed 64-bit integer, or an unsigned one.
SMALLEST_INTEGER, LARGEST_INTEGER = -(1 << 63), (1 << 64) - 1


def _first(value: Any, path: str, said: Callable[[Any, str], str | None]) -> str | None:
    """What `said` says of the first leaf of parsed JSON it has something to say of."""
    if isinstance(value, dict):
        items: Iterable[tuple[str, Any]] = ((f"{path}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return said(value, path)
    for sub_path, sub in items:
        if found := _first(sub, sub_path, said):
            return found
    return None


def _wide(value: Any, path: str) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if SMALLEST_INTEGER <= value <= LARGEST_INTEGER:
        return None
    return f"{path}: an integer beyond 64 bits ({len(str(abs(value)))} digits)"


def unstorable_number(value: Any, path: str = "$") -> str | None:
    """Where the first integer beyond 64 bits is in parsed JSON, and how long it is."""
    return _first(value, path, _wide)


def _nan(value: Any, path: str) -> str | None:
    return path if isinstance(value, float) and not math.isfinite(value) else None


def non_finite(value: Any, path: str = "$") -> str | None:
    """Where the first NaN or infinity is in parsed JSON."""
    return _first(value, path, _nan)


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
    """A request body whose every string (keys included) and number can be stored."""

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        if found := unstorable_text(data):
            raise ValueError(f"cannot be stored: {found}")
        if found := unstorable_number(data):
            raise ValueError(f"cannot be stored: {found}")
        if found := non_finite(data):  # the JSON columns' writer would store null
            raise ValueError(f"cannot be stored: {found}: NaN and infinities are no values")
        return data

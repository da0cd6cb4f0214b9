"""A result document's identity: the SHA-256 of its canonical JSON, by which a run posted
again is known to be the same document (or refused as a different one under the same run id)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson


def document_digest(raw: Any) -> str:
    """SHA-256 of the document's canonical JSON (keys sorted, no spaces).

    `raw` holds no NaN or infinity: the route refuses those first, and orjson, which would
    write them as null, is only given what it parsed itself or what has been checked."""
    try:
        canonical = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, which only the json module reads exactly
        return legacy_digest(raw)
    return hashlib.sha256(canonical).hexdigest()


def legacy_digest(raw: Any) -> str:
    """The digest of runs stored before orjson, which canonicalized through the json module:
    a run posted again after the upgrade still matches its stored self.

    ValueError if `raw` holds a NaN or an infinity."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()

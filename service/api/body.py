"""Reading a JSON request body under a size limit, with errors that say what is wrong."""

from __future__ import annotations

import json
from typing import Any

import orjson
from fastapi import Request

from service.core.errors import ApiError
from service.schemas.document import find_non_finite
from service.schemas.text import may_hold_unstorable, unstorable_text
from service.store.ingest import document_digest


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused with 413 as soon as it is known to exceed `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"body of {int(declared)} bytes is over the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    # Counted while streaming: a client may send no Content-Length or a false one.
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"body is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_body(request: Request, limit: int) -> Any:
    return parse_json(await read_body(request, limit))


def parse_json(body: bytes) -> Any:
    if not body:
        raise ApiError(422, "empty body; send the result document as JSON")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(422, f"body is not UTF-8: {exc.reason} at byte {exc.start}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(
            422, f"body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


def parse_document(body: bytes) -> tuple[Any, str]:
    """The parsed document and its digest, or a 422 that says what cannot be stored.

    orjson reads the usual document (strict JSON: no NaN, no infinities, no lone surrogates) in
    a third of the json module's time; whatever it refuses is read again by json, whose errors,
    and the checks after it, say where the problem is."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError:
        raw = parse_json(body)
        if bad := find_non_finite(raw):
            raise ApiError(
                422, f"invalid document: {bad}: NaN and infinities are not measurements"
            ) from None
    unstorable = unstorable_text(raw) if may_hold_unstorable(body) else None
    if unstorable:
        raise ApiError(422, f"invalid document: {unstorable} cannot be stored")
    return raw, document_digest(raw)

"""Reading a JSON request body under a size limit, with errors that say what is wrong."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import Request

from service.core.errors import Unprocessable
from service.schemas.digest import document_digest
from service.schemas.document import find_non_finite
from service.schemas.text import may_hold_unstorable, unstorable_number, unstorable_text
from service.web.errors import HttpError

# How deep a JSON body may nest. A result document is ~6 levels deep and a GitHub payload ~5;
# deeper input is refused before anything walks it (the checks after parsing, pydantic and
# the digest recurse, and a 1,000-deep array once ended as a 500).
MAX_DEPTH = 64
_CONTAINERS = frozenset((dict, list))


def require_json(request: Request, what: str) -> None:
    """415 unless the request says its body is JSON (application/json, or a +json type)."""
    given = request.headers.get("content-type", "")
    media = given.split(";", 1)[0].strip().lower()
    json_like = media.startswith("application/") and media.endswith("+json")
    if media == "application/json" or json_like:
        return
    said = f"Content-Type {given!r}" if given else "no Content-Type"
    raise HttpError(415, f"{said}: send {what} as application/json")


async def stream_body(request: Request, limit: int) -> AsyncIterator[bytes]:
    """The body chunk by chunk, decompressed where it came gzipped (Content-Encoding: gzip), and
    refused with 413 as soon as it is known to exceed `limit`, before or after decompression
    (a small gzipped body that would inflate past it, a decompression bomb, is cut off there)."""
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        async for chunk in raw_body(request, limit):
            yield chunk
        return
    if encoding != "gzip":
        raise HttpError(415, f"Content-Encoding {encoding!r} is not supported: send gzip or none")
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    size = 0
    async for chunk in raw_body(request, limit):
        pending = chunk
        while pending:
            try:
                out = inflate.decompress(pending, limit + 1 - size)
            except zlib.error as exc:
                raise Unprocessable(f"body is not valid gzip: {exc}") from None
            size += len(out)
            if size > limit:
                raise HttpError(413, f"body is over the {limit}-byte limit once decompressed")
            yield out
            pending = inflate.unconsumed_tail
        if inflate.eof:
            break
    if not inflate.eof:
        raise Unprocessable("body is not valid gzip: it ends before its stream does")


async def raw_body(request: Request, limit: int) -> AsyncIterator[bytes]:
    """The body as sent (a signed webhook's: its signature is over these bytes), refused with
    413 as soon as it is known to exceed `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError(413, f"body of {int(declared)} bytes is over the {limit}-byte limit")
    size = 0
    # Counted while streaming: a client may send no Content-Length or a false one.
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HttpError(413, f"body is over the {limit}-byte limit")
        yield chunk


async def read_body(request: Request, limit: int) -> bytes:
    """The body (decompressed where it came gzipped), refused with 413 as soon as it is known to
    exceed `limit`."""
    return b"".join([chunk async for chunk in stream_body(request, limit)])


def parse_json(body: bytes) -> Any:
    if not body:
        raise Unprocessable("empty body; send the result document as JSON")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unprocessable(f"body is not UTF-8: {exc.reason} at byte {exc.start}") from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unprocessable(
            f"body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError:
        raise too_deep("the body") from None
    check_depth(value, "the body")
    return value


def too_deep(what: str) -> Unprocessable:
    return Unprocessable(
        f"{what} nests deeper than {MAX_DEPTH} levels: a result document is ~6 deep"
    )


def check_depth(value: Any, what: str, limit: int = MAX_DEPTH) -> None:
    """422 where `value` nests deeper than `limit` arrays and objects (walked without
    recursion, containers only, stopping at the first path too deep)."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            raise Unprocessable(f"{too_deep(what).detail} (at {path[:200]})")
        if isinstance(node, dict):
            values = node.values()
            if _CONTAINERS.isdisjoint(map(type, values)):  # C speed: no child to descend into
                continue
            stack.extend(
                (child, depth + 1, f"{path}.{key}")
                for key, child in node.items()
                if isinstance(child, (dict, list))
            )
        elif isinstance(node, list):
            if _CONTAINERS.isdisjoint(map(type, node)):  # samples: a list of numbers
                continue
            stack.extend(
                (child, depth + 1, f"{path}[{i}]")
                for i, child in enumerate(node)
                if isinstance(child, (dict, list))
            )


# An integer literal of 19 digits or more (2**63 has 19): it may be beyond 64 bits.
_LONG_INTEGER = re.compile(rb"(?<![\w.])-?\d{19,}(?![\d.eE])")


def parse_document(body: bytes) -> tuple[Any, str]:
    """The parsed document and its digest, or a 422 that says what cannot be stored.

    orjson reads the usual document (strict JSON: no NaN, no infinities, no lone surrogates) in
    a third of the json module's time; whatever it refuses is read again by json, whose errors,
    and the checks after it, say where the problem is."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc).lower():  # orjson's own limit: 1024
            raise too_deep("the body") from None
        raw = parse_json(body)
        if bad := find_non_finite(raw):
            raise Unprocessable(
                f"invalid document: {bad}: NaN and infinities are not measurements"
            ) from None
        if wide := unstorable_number(raw):  # orjson reads integers of up to 64 bits only
            raise Unprocessable(f"invalid document: {wide} cannot be stored") from None
    else:
        check_depth(raw, "the body")
        # orjson reads an integer beyond 64 bits as a float: 2**80 would be stored as another
        # number. Where the body may hold one, the json module reads it exactly, to refuse it.
        if _LONG_INTEGER.search(body) and (wide := unstorable_number(parse_json(body))):
            raise Unprocessable(f"invalid document: {wide} cannot be stored")
    unstorable = unstorable_text(raw) if may_hold_unstorable(body) else None
    if unstorable:
        raise Unprocessable(f"invalid document: {unstorable} cannot be stored")
    return raw, document_digest(raw)

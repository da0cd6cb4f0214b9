"""The OpenAPI description as the service answers: the result document's schema (the runs route
reads its body by hand), the error statuses each operation can answer, and the one shape of
every error body, `{"detail", "errors"?}` (service.api.errors), in place of FastAPI's default
422 body, which this service never sends."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from service.core import clone_urls
from service.core.settings import Settings
from service.schemas.document import RunDocument

ERROR_BODY: dict[str, Any] = {
    "title": "ErrorBody",
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "description": "what is wrong, in words a person can act on"},
        "errors": {
            "type": "array",
            "description": "422: each invalid field, where it is and what is wrong with it",
            "items": {
                "type": "object",
                "required": ["loc", "msg"],
                "properties": {"loc": {"type": "string"}, "msg": {"type": "string"}},
            },
        },
    },
}
# What each error status means here; every operation may answer those of READ_ERRORS, and one
# that takes a body those of WRITE_ERRORS too.
ERRORS = {
    400: "a NUL in the URL, or a reference that names several things or none at all",
    401: "a token is missing or wrong (reads too, where KERNELWATCH_READ_TOKEN is set)",
    404: "what the request names does not exist, or has no results yet",
    409: "the request contradicts the state it would change (a lease gone, a run stored "
    "with other contents)",
    413: "the body is over the size limit (after decompression)",
    415: "the body is not said to be JSON, or is encoded other than gzip",
    422: "the request is well-formed but cannot be stored or answered as it is: `errors` "
    "names each field",
    503: "the database (or the webhook secret) is not available; try again after Retry-After",
}
READ_ERRORS = (400, 401, 404, 422, 503)
# Reads are open, or need the read (or admin) token where KERNELWATCH_READ_TOKEN is set
# (service.api.access): each GET names the scheme, and an empty requirement beside it.
READ_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "the read token (KERNELWATCH_READ_TOKEN) or the admin token, where the "
    "server's reads are private; none where they are open",
}
OPEN_PATHS = ("/healthz",)
WRITE_ERRORS = (*READ_ERRORS, 409, 413, 415)
_REF = "#/components/schemas/ErrorBody"


# Text the service stores holds no NUL (service.schemas.text): a body's string with one is
# refused (422), a URL's too (400). (Nor a lone surrogate, which JSON text cannot carry as such.)
STORABLE = "[^\\x00]*"


def _clone_urls(model: dict[str, Any], settings: Settings) -> None:
    """A job's clone URL as this deployment allows it (service.core.clone_urls)."""
    allowed = clone_urls.pattern(settings)
    field = model.get("properties", {}).get("clone_url", {})
    for option in field.get("anyOf", [field]):
        if allowed and option.get("type") == "string":
            option["pattern"] = f"^$|(?:{allowed}){STORABLE}$"


def _storable(schema: Any) -> None:
    """Every string of `schema` (walked through properties, pattern properties (labels' values),
    items, anyOf) that has no pattern of its own gets STORABLE's."""
    if not isinstance(schema, dict):
        return
    free = "pattern" not in schema and "enum" not in schema and "format" not in schema
    if schema.get("type") == "string" and free:
        schema["pattern"] = f"^{STORABLE}$"
    if schema.get("type") == "object":
        schema.setdefault("propertyNames", {}).setdefault("pattern", f"^{STORABLE}$")  # keys too
        if "patternProperties" in schema:  # (labels): a key of no pattern is refused
            schema.setdefault("additionalProperties", False)
    for key in ("properties", "patternProperties", "$defs"):
        for child in (schema.get(key) or {}).values():
            _storable(child)
    for key in ("items", "additionalProperties"):
        _storable(schema.get(key))
    for key in ("anyOf", "oneOf", "allOf"):
        for child in schema.get(key) or []:
            _storable(child)


def describe(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI description (built once)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, summary=app.summary, routes=app.routes
    )
    document = RunDocument.model_json_schema(ref_template="#/components/schemas/{model}")
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.update(document.pop("$defs", {}))
    # Pydantic may answer with the model among its own $defs and a bare $ref to it: that $ref
    # must not replace the definition (a component pointing at itself broke /redoc).
    if set(document) != {"$ref"}:
        components["RunDocument"] = document
    for component in components.values():
        _storable(component)
    components["ErrorBody"] = ERROR_BODY
    _clone_urls(components.get("JobCreate", {}), app.state.settings)
    for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's, never sent here
        components.pop(name, None)
    schema["components"].setdefault("securitySchemes", {})["ReadToken"] = READ_SCHEME
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if method == "get" and path not in OPEN_PATHS and "security" not in operation:
                operation["security"] = [{"ReadToken": []}, {}]
            for parameter in operation.get("parameters", []):
                _storable(parameter.get("schema", {}))
            responses = operation.setdefault("responses", {})
            for status in WRITE_ERRORS if method in ("post", "put", "patch") else READ_ERRORS:
                responses[str(status)] = {
                    "description": ERRORS[status],
                    "content": {"application/json": {"schema": {"$ref": _REF}}},
                }
    app.openapi_schema = schema
    return schema

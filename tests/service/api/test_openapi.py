"""The OpenAPI description as the service answers it (service.api.openapi): every operation
describes the error statuses it can answer (those of a read, and a write's 409, 413 and 415
beside them), each with the one error body `{"detail", "errors"?}` in place of FastAPI's
validation error, which is never sent; every string without a rule of its own (a pattern, an
enum, a format), and every object's keys, take any text but a NUL; a job's clone URL is
described as the deployment allows it; and the description is built once per app."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi import FastAPI

from service.api import openapi
from service.api.app import create_app
from service.core.settings import Settings

STORABLE = f"^{openapi.STORABLE}$"


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings, migrate=False)


def operations(described: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, methods in described["paths"].items()
        for method, operation in methods.items()
    ]


def test_each_operation_describes_the_errors_its_method_can_answer(app: FastAPI) -> None:
    described = openapi.describe(app)
    seen = {method for method, _, _ in operations(described)}
    assert {"get", "post", "patch"} <= seen
    for method, path, operation in operations(described):
        write = method in ("post", "put", "patch")
        expected = set(openapi.WRITE_ERRORS if write else openapi.READ_ERRORS)
        errors = {int(s) for s in operation["responses"] if int(s) >= 400}
        assert errors == expected, (method, path)
        for status in expected:
            answer = operation["responses"][str(status)]
            assert answer["description"] == openapi.ERRORS[status]
            schema = answer["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)


def test_the_one_error_body_replaces_fastapis_validation_error(app: FastAPI) -> None:
    described = openapi.describe(app)
    schemas = described["components"]["schemas"]
    assert schemas["ErrorBody"] == openapi.ERROR_BODY
    assert schemas["ErrorBody"]["required"] == ["detail"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    assert "HTTPValidationError" not in json.dumps(described)


def test_a_string_without_a_rule_of_its_own_takes_any_text_but_nul() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "free": {"type": "string"},
            "sha": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
            "state": {"type": "string", "enum": ["open", "fixed"]},
            "when": {"type": "string", "format": "date-time"},
            "names": {"type": "array", "items": {"type": "string"}},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
            "labels": {"type": "object", "patternProperties": {"^\\w+$": {"type": "string"}}},
        },
        "$defs": {"Inner": {"type": "string", "maxLength": 10}},
    }
    openapi._storable(schema)
    fields = schema["properties"]
    assert fields["free"]["pattern"] == STORABLE
    assert fields["sha"]["pattern"] == "^[0-9a-f]{40}$"  # its own rule stays
    assert "pattern" not in fields["state"] and "pattern" not in fields["when"]
    assert fields["names"]["items"]["pattern"] == STORABLE
    assert fields["maybe"]["anyOf"][0]["pattern"] == STORABLE
    assert fields["extra"]["additionalProperties"]["pattern"] == STORABLE
    assert schema["$defs"]["Inner"]["pattern"] == STORABLE
    for value in (schema, fields["extra"], fields["labels"]):  # an object's keys too
        assert value["propertyNames"] == {"pattern": STORABLE}
    # Keys matching no pattern of patternProperties are refused, not taken as anything.
    assert fields["labels"]["additionalProperties"] is False
    assert fields["extra"]["additionalProperties"]["type"] == "string"  # its own schema stays


def test_the_apps_free_strings_and_query_parameters_refuse_a_nul(app: FastAPI) -> None:
    described = openapi.describe(app)
    document = described["components"]["schemas"]["RunDocument"]
    assert document["properties"]["suite"]["pattern"] == STORABLE
    assert document["propertyNames"] == {"pattern": STORABLE}
    listing = described["paths"]["/api/v1/runs"]["get"]["parameters"]
    parameters = {p["name"]: p["schema"] for p in listing}
    assert parameters["repository"]["anyOf"][0]["pattern"] == STORABLE
    assert parameters["commit"]["anyOf"][0]["pattern"] == "^[0-9A-Fa-f]{4,40}$"
    imports = described["paths"]["/api/v1/imports/{format}"]["post"]["parameters"]
    format_schema = next(p["schema"] for p in imports if p["name"] == "format")
    assert "pattern" not in format_schema and format_schema["enum"] == ["gbench", "nvbench"]


def clone_url_patterns(settings: Settings) -> list[str]:
    described = openapi.describe(create_app(settings, migrate=False))
    field = described["components"]["schemas"]["JobCreate"]["properties"]["clone_url"]
    return [o["pattern"] for o in field["anyOf"] if o.get("type") == "string"]


def test_a_jobs_clone_url_is_described_as_the_deployment_allows_it(settings: Settings) -> None:
    only_https = settings.model_copy(
        update={"allow_local_clone_urls": False, "clone_url_schemes": ["https"]}
    )
    (pattern,) = clone_url_patterns(only_https)
    for url in ("", "https://github.com/acme/kernels.git"):
        assert re.search(pattern, url), url
    refused = [
        "ssh://git@github.com/acme/kernels",
        "git@github.com:acme/kernels.git",
        "/srv/git/kernels",
        "file:///etc",
        "ext::sh -c touch% /tmp/x",
        "https://github.com/acme/\x00kernels",
    ]
    for url in refused:
        assert not re.search(pattern, url), url


def test_where_local_paths_are_allowed_the_clone_url_keeps_only_its_own_rule(
    settings: Settings,
) -> None:
    assert settings.allow_local_clone_urls
    assert clone_url_patterns(settings) == ["^$|^[^-]"]  # not an option to git, else any text


def test_the_description_is_built_once(app: FastAPI) -> None:
    first = openapi.describe(app)
    assert openapi.describe(app) is first
    assert app.openapi() is first


def test_a_labels_values_refuse_a_nul_as_the_service_does(app: FastAPI) -> None:
    """Labels are a dict of pattern properties: their values are strings too (a NUL in one is
    refused with a 422 by the service, so the description says so)."""
    schemas = openapi.describe(app)["components"]["schemas"]
    labels = schemas["RunnerRegister"]["properties"]["labels"]
    (value,) = labels["patternProperties"].values()
    assert value["pattern"] == f"^{openapi.STORABLE}$"

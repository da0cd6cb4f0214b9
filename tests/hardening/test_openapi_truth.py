"""The OpenAPI description tells the truth (issue 35, item 6): schemathesis over every operation,
schema-conforming and non-conforming cases, each answer checked by every schemathesis check
(status codes and bodies as declared, headers, content types, a schema-valid request accepted,
an invalid one refused, no 5xx), on SQLite and PostgreSQL.

Where a schema-valid request is still refused, the rule that refuses it is one JSON Schema cannot
state (POSITIVE_DATA_BEYOND_SCHEMA says which): the description documents the refusal (its
status and body) instead."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    positive_data_acceptance,
)
from sqlalchemy import Engine

from service.api.app import create_app
from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer
from tests.service.store.jobs.test_queue import make_runner

EXAMPLES = int(os.environ.get("KERNELWATCH_OPENAPI_EXAMPLES", "6"))
POSITIVE_DATA_BEYOND_SCHEMA = {
    # a document's commit line (ancestors start at the first parent), storable text (no NUL),
    # git branch names, units: the result document's own rules (service.schemas.document)
    "POST /api/v1/runs": "a result document's cross-field rules",
    # a body in a format the query names (nvbench JSON, CSV), parsed by the importer
    "POST /api/v1/imports/{format}": "the imported file's format",
    # one series named by id, or by repository, workload, kernel and metric together
    "GET /api/v1/series": "which parameters name one series together",
    # a short sha that names several commits (400, with the candidates)
    "GET /api/v1/commits/{sha}/metrics": "a short sha unique among the stored commits",
    "GET /commits/{sha}.json": "a short sha unique among the stored commits",
    "GET /api/v1/compare": "a short sha unique among the stored commits",
    "GET /compare.json": "a short sha unique among the stored commits",
    # log=1 beside scale=change (the parameter's description says it is refused)
    "GET /trends.json": "log and scale together",
    "GET /trends": "log and scale together",
    "GET /trends.csv": "log and scale together",
    # text nested in a runner's environment holds no NUL (service.schemas.text), below the
    # top level's keys, which the description's pattern covers
    "POST /api/v1/runners/register": "storable text nested in the environment",
}


READ_TOKEN = "openapi-read-token-" + "r" * 24


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveServer]:
    settings.webhook_secret = "openapi-secret"  # else the webhook answers 503: webhooks off
    settings.allow_local_clone_urls = False  # the default, whose clone URLs have a pattern
    settings.read_token = READ_TOKEN  # private reads: each token's answers as described
    with LiveServer(create_app(settings, migrate=False)) as server:
        yield server


def _run(operation: Any, mode: GenerationMode, live: LiveServer, http: requests.Session,
         excluded: list[Any], failures: dict[str, str], token: str) -> None:  # fmt: skip
    """EXAMPLES cases of `operation` in `mode`, every check but `excluded` on each answer; the
    first failure (per operation and mode) into `failures`."""
    key = f"{operation.method.upper()} {operation.path} ({mode.name.lower()})"

    @seed(35)
    @hypothesis_settings(
        max_examples=EXAMPLES, deadline=None, database=None,
        suppress_health_check=list(HealthCheck), phases=[Phase.generate],
    )  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        try:
            case.call_and_validate(
                base_url=live.url, session=http, excluded_checks=excluded,
                headers={"Authorization": f"Bearer {token}"},
            )  # fmt: skip
        except BaseException as exc:  # schemathesis' failure groups
            failures.setdefault(key, str(exc)[:1500])

    # Unsatisfiable: no non-conforming case exists (an operation without parameters).
    with contextlib.suppress(Unsatisfiable):
        one()


@pytest.mark.parametrize("who", ["admin", "runner", "reader"])
def test_every_operation_answers_as_its_description_says(
    live: LiveServer, engine: Engine, who: str
) -> None:
    """With each of the three tokens: what a token may not do is a 401 or 403 its description
    names, never another answer."""
    token = {"admin": ADMIN_TOKEN, "reader": READ_TOKEN}.get(who) or make_runner(engine, "oa")
    schema = schemathesis.openapi.from_dict(live.app.openapi())
    http = requests.Session()
    failures: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    described = live.app.openapi()["paths"]
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        excluded = [positive_data_acceptance] if label in POSITIVE_DATA_BEYOND_SCHEMA else []
        if _repeatable_query(described[operation.path][operation.method.lower()]):
            # One value of a repeatable query parameter (?kernel=a) is an array of one: what
            # schemathesis sends as "a string where an array goes" is a valid request.
            excluded.append(negative_data_rejection)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _run(operation, mode, live, http, excluded, failures, token)
    http.close()
    assert failures == {}, "\n\n".join(f"{k}: {v}" for k, v in failures.items())


def _repeatable_query(operation: dict[str, Any]) -> bool:
    """Whether the operation takes a query parameter given as an array (repeated)."""
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        options = schema.get("anyOf", [schema])
        if parameter.get("in") == "query" and any(o.get("type") == "array" for o in options):
            return True
    return False

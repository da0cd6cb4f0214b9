"""Schemathesis over the whole OpenAPI surface, on SQLite and PostgreSQL: no 5xx, nothing partial.

Every operation of the OpenAPI description gets schema-conforming (positive) and non-conforming
(negative) cases, each sent with the admin token, a runner token or none, so that the
authenticated paths are exercised and not only the 401s. Beside schemathesis, Hypothesis mutates
valid result documents (text fields get injection strings, any Unicode, NUL; numbers get huge,
negative or fractional values) and signed push payloads, which a schema alone would rarely make
valid enough to reach the database.

After every case: no 5xx; a 4xx and every GET left the row counts of every table as they were.
At the end, every run a 201 answered for holds exactly the posted document's workloads, build
resources and results, and no result lies outside a run. `KERNELWATCH_FUZZ_EXAMPLES` (cases per
operation and mode, default 20: over 1,000 cases per database) scales the run up;
`KERNELWATCH_FUZZ_SEED` picks another seed.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import hmac
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from service.api.app import create_app
from service.core.settings import Settings
from service.models import Base, BuildResource, Result, Run, RunWorkload
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, post_history, sha_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import push_payload
from tests.service.store.jobs.test_queue import make_jobs, make_runner

SECRET = "fuzz-webhook-secret"
EXAMPLES = int(os.environ.get("KERNELWATCH_FUZZ_EXAMPLES", "20"))
SEED = int(os.environ.get("KERNELWATCH_FUZZ_SEED", "0"))
DEADLINE_SECONDS = 150  # per database: the generator stops here, whatever it has left
# Written by the analysis worker after a store answered, not by the request itself.
BACKGROUND_TABLES = {"change_points"}

INJECTIONS = [
    "'; DROP TABLE runs; --",
    '" OR 1=1 --',
    "main' OR '1'='1",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "{{7*7}}${7*7}",
    "../../etc/passwd",
    "\u0000",
    "a\u0000b",
    "\ud7ff\ue000\U0010ffff",
    "\ud800",
    "\udfff lone",
    "x" * 256,
    "x" * 1001,
    "x" * 70_000,
    "",
    " ",
]
VALUES = st.one_of(
    st.sampled_from(INJECTIONS),
    st.text(max_size=300),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
)
DOCUMENT_FIELDS: list[tuple[Any, ...]] = [
    ("branch",),
    ("suite",),
    ("log_tail",),
    ("job_id",),
    ("repository", "name"),
    ("repository", "url"),
    ("commit", "message"),
    ("commit", "author_name"),
    ("commit", "author_email"),
    ("runner", "name"),
    ("runner", "host"),
    ("environment", "gpu", "name"),
    ("environment", "gpu", "sm_count"),
    ("environment", "gpu", "memory_bytes"),
    ("environment", "driver_version"),
    ("environment", "extra_fact"),
    ("build", "log_tail"),
    ("build", "seconds"),
    ("build", "kernels", 0, "kernel"),
    ("build", "kernels", 0, "registers"),
    ("build", "kernels", 0, "shared_bytes"),
    ("workloads", 0, "name"),
    ("workloads", 0, "kernels", 0),
    ("workloads", 0, "params", "act"),
    ("workloads", 0, "params", "free text"),
    ("workloads", 0, "flops"),
    ("workloads", 0, "error"),
    ("workloads", 0, "correctness", "unwritten"),
    ("workloads", 0, "correctness", "precision"),
    ("workloads", 0, "timing", "kernel"),
    ("workloads", 0, "timing", "metric"),
    ("workloads", 0, "timing", "n"),
    ("workloads", 0, "timing", "processes", 0, "samples", 0),
    ("workloads", 0, "timing", "processes", 0, "sm_clock_mhz"),
]
WEBHOOK_FIELDS: list[tuple[Any, ...]] = [
    ("ref",),
    ("after",),
    ("deleted",),
    ("repository", "full_name"),
    ("repository", "clone_url"),
    ("head_commit", "id"),
    ("head_commit", "message"),
    ("commits", 0, "message"),
    ("commits", 0, "distinct"),
    ("commits",),
]


@dataclass
class Ledger:
    """What the fuzzing sent and what came back."""

    cases: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    stored: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)

    def fail(self, what: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(what)


class Fuzz:
    def __init__(self, live: LiveServer, engine: Engine, tokens: dict[str, str | None]) -> None:
        self.live, self.engine, self.tokens = live, engine, tokens
        self.http = requests.Session()
        self.ledger = Ledger()
        self.deadline = time.monotonic() + DEADLINE_SECONDS
        tables = [t.name for t in Base.metadata.sorted_tables if t.name not in BACKGROUND_TABLES]
        counts = ", ".join(f'(SELECT count(*) FROM "{t}") AS "{t}"' for t in tables)
        self._count_sql = text(f"SELECT {counts}")

    def counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return dict(conn.execute(self._count_sql).one()._mapping)

    def check(
        self,
        label: str,
        send: Callable[[], requests.Response],
        *,
        reads: bool,
        body: Any = None,
        repro: Callable[[], str] = lambda: "",
    ) -> requests.Response:
        before = self.counts()
        response = send()
        after = self.counts()
        ledger = self.ledger
        ledger.cases[label] += 1
        ledger.statuses[response.status_code] += 1
        status = response.status_code
        if status >= 500:
            ledger.fail(f"{label}: {status} {response.text[:300]}\n{repro()[:1000]}")
        elif (reads or 400 <= status < 500) and before != after:
            changed = {t: (before[t], after[t]) for t in before if before[t] != after[t]}
            ledger.fail(f"{label}: {status} changed row counts {changed}\n{repro()[:1000]}")
        if label == "POST /api/v1/runs" and status == 201 and isinstance(body, dict):
            ledger.stored[response.json()["run_id"]] = (response.json()["results"], body)
        return response

    def run(self, strategy: st.SearchStrategy, test: Callable[[Any], None], examples: int) -> None:
        @seed(SEED)
        @hypothesis_settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=SEED == 0,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def each(value: Any) -> None:
            if time.monotonic() < self.deadline:
                test(value)

        # Unsatisfiable: e.g. no negative case exists for an operation without parameters.
        with contextlib.suppress(Unsatisfiable):
            each()


@pytest.fixture
def fuzz(settings: Settings, engine: Engine) -> Iterator[Fuzz]:
    settings.webhook_secret = SECRET
    with LiveServer(create_app(settings, migrate=False)) as live:
        with live.client(ADMIN_TOKEN) as admin:
            # A history with a regression at its head: series, verdicts, an alert to patch.
            post_history(admin, 4, {"gemm_bias_act_f32": 100.0})
            head = document(commit="c4", parents=["c3"], ancestors=["c3", "c2", "c1", "c0"])
            head["workloads"][0]["timing"] = document(commit="x", medians={"k": 150.0})[
                "workloads"
            ][0]["timing"] | {"kernel": "gemm_bias_act_f32"}
            assert admin.post("/api/v1/runs", json=head).status_code == 201
        runner = make_runner(engine, "fuzz-runner", {"gpu": "h100"})
        make_jobs(engine, 3)
        with live.client(runner) as client:
            assert client.post("/api/v1/jobs/claim").status_code == 200
        yield Fuzz(live, engine, {"admin": ADMIN_TOKEN, "runner": runner, "none": None})


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _fuzz_openapi(fuzz: Fuzz) -> None:
    schema = schemathesis.openapi.from_dict(fuzz.live.app.openapi())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25, [f"{o.method} {o.path}" for o in operations]
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        reads = operation.method.upper() == "GET"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = st.tuples(
                operation.as_strategy(generation_mode=mode), st.sampled_from(sorted(fuzz.tokens))
            )

            def one(drawn: tuple[Any, str], label: str = label, reads: bool = reads) -> None:
                case, who = drawn
                headers = _headers(fuzz.tokens[who])
                fuzz.check(
                    label,
                    lambda: case.call(base_url=fuzz.live.url, session=fuzz.http, headers=headers),
                    reads=reads,
                    body=case.body,
                    repro=lambda: f"as {who}: " + case.as_curl_command(base_url=fuzz.live.url),
                )

            fuzz.run(strategy, one, EXAMPLES)


def _set(target: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _fuzz_documents(fuzz: Fuzz) -> None:
    mutation = st.lists(st.tuples(st.sampled_from(DOCUMENT_FIELDS), VALUES), min_size=1, max_size=3)
    strategy = st.tuples(mutation, st.sampled_from(["admin", "admin", "runner"]))

    def one(drawn: tuple[list[tuple[tuple[Any, ...], Any]], str]) -> None:
        changes, who = drawn
        doc = document(commit=uuid.uuid4().hex, parents=["c3"], ancestors=["c3", "c2"])
        for path, value in changes:
            _set(doc, path, copy.deepcopy(value))
        fuzz.check(
            "POST /api/v1/runs",
            lambda: fuzz.http.post(
                f"{fuzz.live.url}/api/v1/runs", json=doc, headers=_headers(fuzz.tokens[who])
            ),
            reads=False,
            body=doc,
            repro=lambda: f"as {who}, document changed at {changes!r}"[:1000],
        )

    fuzz.run(strategy, one, EXAMPLES * 6)


def _fuzz_webhook(fuzz: Fuzz) -> None:
    mutation = st.lists(st.tuples(st.sampled_from(WEBHOOK_FIELDS), VALUES), max_size=3)
    events = st.sampled_from(["push", "push", "push", "ping", "issues", "", "pu\u00dfh"])

    def one(drawn: tuple[list[tuple[tuple[Any, ...], Any]], str]) -> None:
        changes, event = drawn
        head = sha_for(uuid.uuid4().hex)
        payload = push_payload(after=head, commits=[sha_for("a"), head])
        for path, value in changes:
            # TypeError and the like: an earlier change replaced the container.
            with contextlib.suppress(TypeError, IndexError, KeyError):
                _set(payload, path, copy.deepcopy(value))
        body = json.dumps(payload).encode()
        signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {
            "X-GitHub-Event": event.encode("utf-8").decode("latin-1"),
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": f"sha256={signature}",
            "Content-Type": "application/json",
        }
        before = fuzz.counts()["jobs"]
        answer = fuzz.check(
            "POST /webhooks/github (signed)",
            lambda: fuzz.http.post(f"{fuzz.live.url}/webhooks/github", data=body, headers=headers),
            reads=False,
            repro=lambda: f"event {event!r}, payload changed at {changes!r}"[:1000],
        )
        queued = answer.json().get("job_ids", []) if answer.status_code == 202 else []
        if fuzz.counts()["jobs"] - before != len(queued):
            fuzz.ledger.fail(f"webhook {answer.status_code} queued {queued}; jobs changed else")

    fuzz.run(st.tuples(mutation, events), one, EXAMPLES * 4)


def _consistent(engine: Engine, stored: dict[str, tuple[int, dict[str, Any]]]) -> list[str]:
    problems: list[str] = []
    with Session(engine) as session:
        runs = dict(session.execute(select(Run.run_uuid, Run.id)).all())
        for run_uuid, (results, doc) in stored.items():
            pk = runs.get(run_uuid)
            if pk is None:
                problems.append(f"run {run_uuid} answered 201 but is not stored")
                continue
            got = (
                session.scalar(select(func.count()).where(RunWorkload.run_id == pk)),
                session.scalar(select(func.count()).where(BuildResource.run_id == pk)),
                session.scalar(select(func.count()).where(Result.run_id == pk)),
            )
            want = (len(doc.get("workloads", [])), len(doc["build"].get("kernels", [])), results)
            if got != want:
                problems.append(f"run {run_uuid}: (workloads, build, results) {got} != {want}")
        orphans = session.scalar(select(func.count()).where(Result.run_id.not_in(select(Run.id))))
        if orphans:
            problems.append(f"{orphans} results belong to no run")
    return problems


def test_fuzz_the_api(fuzz: Fuzz, db_url: str) -> None:
    started = time.monotonic()
    _fuzz_openapi(fuzz)
    _fuzz_documents(fuzz)
    _fuzz_webhook(fuzz)
    ledger = fuzz.ledger
    total = sum(ledger.cases.values())
    database = db_url.split(":", 1)[0]
    print(
        f"\nfuzzed {total} cases on {database} in {time.monotonic() - started:.0f} s over "
        f"{len(ledger.cases)} operations; statuses {dict(sorted(ledger.statuses.items()))}; "
        f"{len(ledger.stored)} documents stored"
    )
    assert not ledger.failures, "\n\n".join(ledger.failures)
    assert not _consistent(fuzz.engine, ledger.stored)
    assert total >= 50 * EXAMPLES, f"only {total} cases ran before the deadline"
    assert ledger.stored, "no fuzzed document was valid enough to be stored"
    assert ledger.statuses[200] + ledger.statuses[201] > 50, ledger.statuses

"""Access: private reads, revoked runner tokens, secrets kept out of logs and compared in
constant time, and SQL and HTML injection in every text field coming out inert."""

from __future__ import annotations

import ast
import importlib
import logging
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import Engine, func, select, text

from service import pages
from service.api import routes
from service.api.app import create_app
from service.cli import main as kernelwatch
from service.core.settings import Settings
from service.models import Result, Run
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.live_server import LiveServer
from tests.service.api.routes.test_webhooks import SECRET, Hook, push_payload
from tests.service.store.jobs.test_queue import make_jobs, make_runner

READ_TOKEN = "test-read-token"
ROOT = Path(__file__).resolve().parents[2]


def _history(client: httpx.Client, **texts: str) -> list[dict]:
    """Five steady commits and a regressed sixth, every text field set from `texts`."""
    kernel = texts.get("kernel", "gemm_bias_act_f32")
    docs = []
    for i in range(6):
        doc = document(
            commit=f"c{i}",
            parents=[f"c{i - 1}"] if i else [],
            ancestors=[f"c{j}" for j in range(i - 1, -1, -1)],
            minutes=i,
            medians={kernel: 150.0 if i == 5 else 100.0},
            seed=i,
            branch=texts.get("branch", "main"),
        )
        doc["commit"]["message"] = texts.get("message", doc["commit"]["message"])
        doc["commit"]["author_name"] = texts.get("author", "Ada")
        doc["suite"] = texts.get("suite", doc["suite"])
        doc["runner"]["name"] = texts.get("runner", "h100-a")
        doc["environment"]["gpu"]["name"] = texts.get("gpu", "NVIDIA H100 80GB HBM3")
        doc["workloads"][0]["params"]["note"] = texts.get("param", "plain")
        doc["build"]["kernels"][0]["kernel"] = kernel
        answer = client.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201, answer.text
        docs.append(doc)
    return docs


# --- private reads -------------------------------------------------------------------------------


@pytest.fixture
def private(settings: Settings, engine: Engine) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    settings.read_token = READ_TOKEN
    settings.webhook_secret = SECRET
    with LiveServer(create_app(settings, migrate=False)) as live:
        with live.client(ADMIN_TOKEN) as admin:
            docs = _history(admin)
        runner = make_runner(engine, "reader-runner")
        values = {
            "sha": docs[-1]["commit"]["sha"],
            "run_id": docs[-1]["run_id"],
            "job_id": "1",
            "alert_id": "1",
        }
        yield live, {"runner": runner, **values}


def _get_paths(values: dict[str, str]) -> list[str]:
    """Every GET route of every router of the app (the API's and the pages'), its path
    parameters filled in."""
    paths = []
    modules = [(package, info.name) for package in (routes, pages)
               for info in pkgutil.iter_modules(package.__path__)]  # fmt: skip
    for package, name in modules:
        router = getattr(importlib.import_module(f"{package.__name__}.{name}"), "router", None)
        for route in getattr(router, "routes", []):
            if isinstance(route, APIRoute) and "GET" in route.methods:
                filled = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], route.path)
                paths.append(filled)
    return [*paths, "/docs", "/openapi.json", "/no/such/page"]


def test_with_a_read_token_every_get_but_healthz_needs_it(private) -> None:
    live, values = private
    paths = _get_paths(values)
    assert len(paths) >= 20
    assert "/api/v1/commits/{sha}/metrics".replace("{sha}", values["sha"]) in paths
    leaked: dict[str, list[int]] = {}
    opened: dict[str, int] = {}
    for path in paths:
        if path == "/healthz" or path.startswith("/static/"):
            continue
        for token in (None, "wrong", values["runner"], READ_TOKEN[:-1]):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = httpx.get(f"{live.url}{path}", headers=headers)
            if answer.status_code != 401:
                leaked.setdefault(path, []).append(answer.status_code)
            else:
                assert "KERNELWATCH_READ_TOKEN" in answer.json()["detail"]
                assert answer.headers["WWW-Authenticate"].startswith("Bearer")
            # HEAD reads what GET reads (its headers: a length, an ETag): behind the same token.
            if httpx.head(f"{live.url}{path}", headers=headers).status_code != 401:
                leaked.setdefault(f"HEAD {path}", []).append(answer.status_code)
        for who, token in (("read", READ_TOKEN), ("admin", ADMIN_TOKEN)):
            answer = httpx.get(f"{live.url}{path}", headers={"Authorization": f"Bearer {token}"})
            opened[f"{path} as {who}"] = answer.status_code
    assert leaked == {}, f"answered without the read token: {leaked}"
    closed = {k: v for k, v in opened.items() if v == 401 or v >= 500}
    assert closed == {}
    assert sum(v == 200 for v in opened.values()) >= len(paths), opened


def test_the_description_says_which_reads_take_the_read_token(private) -> None:
    """Every GET but /healthz names the read token's scheme, beside an empty requirement
    (reads open where no read token is set): what a generated client sends it by."""
    live, _ = private
    reader = {"Authorization": f"Bearer {READ_TOKEN}"}
    described = httpx.get(f"{live.url}/openapi.json", headers=reader).json()
    assert described["components"]["securitySchemes"]["ReadToken"]["scheme"] == "bearer"
    gets = {p: ops["get"] for p, ops in described["paths"].items() if "get" in ops}
    assert len(gets) >= 15
    for path, operation in gets.items():
        expected = None if path == "/healthz" else [{"ReadToken": []}, {}]
        assert operation.get("security") == expected, path


def test_healthz_static_and_writes_are_not_behind_the_read_token(private) -> None:
    live, values = private
    assert httpx.get(f"{live.url}/healthz").status_code == 200
    assert httpx.get(f"{live.url}/static/vendor/plotly.min.js").status_code == 200
    make = httpx.post(f"{live.url}/api/v1/jobs/claim", headers={"Authorization": "Bearer x"})
    assert make.status_code == 401 and "runner token" in make.json()["detail"]
    with live.client(values["runner"]) as runner:
        assert runner.post("/api/v1/jobs/claim").status_code == 204
    with live.client() as client:
        assert Hook(client).send(push_payload(after=sha_for("p"))).status_code == 202


def test_without_a_read_token_reads_are_public(server: LiveServer) -> None:
    assert httpx.get(f"{server.url}/api/v1/jobs").status_code == 200
    assert httpx.get(f"{server.url}/").status_code == 200


# --- runner tokens: revoked, never logged --------------------------------------------------------


def test_a_revoked_runner_token_is_refused_and_a_new_one_works(
    settings: Settings,
    server: LiveServer,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", settings.effective_database_url)
    assert kernelwatch(["runner-token", "create", "h100-a"]) == 0
    token = capsys.readouterr().out.strip()
    make_jobs(engine, 1)
    with server.client(token) as client:
        claimed = client.post("/api/v1/jobs/claim")
        assert claimed.status_code == 200
        attempt = {"attempt_token": claimed.json()["attempt_token"]}
        job_id = claimed.json()["job"]["id"]
        assert kernelwatch(["runner-token", "revoke", "h100-a"]) == 0
        assert "revoked" in capsys.readouterr().out
        for method, path, body in [
            ("POST", "/api/v1/jobs/claim", None),
            ("POST", "/api/v1/runners/heartbeat", None),
            ("POST", "/api/v1/runners/health", {"healthy": False, "reason": "gone"}),
            ("POST", f"/api/v1/jobs/{job_id}/lease", attempt),
            ("POST", f"/api/v1/jobs/{job_id}/fail", attempt),
            ("POST", "/api/v1/runs", document(commit="j0")),
        ]:
            answer = client.request(method, path, json=body)
            assert answer.status_code == 401, (path, answer.text)
            assert "revoked" in answer.json()["detail"]
    assert kernelwatch(["runner-token", "create", "h100-a"]) == 0
    renewed = capsys.readouterr().out.strip()
    assert renewed != token
    with server.client(token) as old, server.client(renewed) as new:
        assert old.post("/api/v1/runners/heartbeat").status_code == 401
        assert new.post("/api/v1/runners/heartbeat").status_code == 200
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT token_hash FROM runners")).scalars().all()
    assert token not in str(stored) and renewed not in str(stored)


def test_no_secret_reaches_the_logs(
    settings: Settings, engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings.read_token, settings.webhook_secret = READ_TOKEN, SECRET
    runner = make_runner(engine, "h100-a")
    make_jobs(engine, 2)
    with LiveServer(create_app(settings, migrate=False)) as live:
        with live.client(runner) as client:
            claimed = client.post("/api/v1/jobs/claim").json()
            attempt = claimed["attempt_token"]
            job_id = claimed["job"]["id"]
            client.post(f"/api/v1/jobs/{job_id}/lease", json={"attempt_token": attempt})
            client.post(f"/api/v1/jobs/{job_id}/lease", json={"attempt_token": attempt + "x"})
            late = document(commit="j0")
            late["job_id"], late["lease_token"] = job_id, attempt + "x"
            client.post("/api/v1/runs", json=late)
            client.post(f"/api/v1/jobs/{job_id}/fail", json={"attempt_token": attempt})
        for token in (runner + "x", ADMIN_TOKEN + "x", READ_TOKEN + "x", READ_TOKEN, ADMIN_TOKEN):
            with live.client(token) as client:
                client.get("/api/v1/jobs")
                client.post("/api/v1/jobs/claim")
                client.post("/api/v1/jobs", json={"repository": "a/b", "sha": sha_for("x")})
        with live.client() as client:
            Hook(client).send(push_payload(after=sha_for("p")))
            Hook(client, secret="wrong").send(push_payload(after=sha_for("q")))
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    for secret in (runner, attempt, ADMIN_TOKEN, READ_TOKEN, SECRET):
        assert secret not in logged
        assert secret[:12] not in logged


# --- constant time -------------------------------------------------------------------------------

SECRET_NAME = re.compile(r"(token|secret|signature|password)", re.IGNORECASE)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def test_secrets_are_compared_only_in_constant_time() -> None:
    """No `==`, `!=` or `in` on a token, secret or signature in the service: same_secret."""
    found = []
    for path in sorted((ROOT / "service").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Compare):
                continue
            if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
                continue
            for side in (node.left, *node.comparators):
                name = _name(side)
                # A hash compared in SQL is a lookup: the hash of a high-entropy token leaks
                # nothing, and same_secret checks the row that comes back.
                if SECRET_NAME.search(name) and not name.endswith("_hash"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert found == []
    uses = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "service").rglob("*.py")
        if "same_secret(" in p.read_text()
    }
    assert {
        "service/api/deps.py",
        "service/api/access.py",
        "service/api/routes/webhooks.py",
        "service/store/jobs/queue.py",
    } <= uses


# --- injection -----------------------------------------------------------------------------------

SCRIPT = '<script>alert("kw-xss")</script>'
INJECTED = {
    "branch": 'main\';DROP-TABLE-runs;--<script>alert("kw-xss")</script>',
    "message": f"fix'); DROP TABLE runs; --\n\n{SCRIPT}\n\"><img src=x onerror=alert(1)>",
    "author": f"Robert'); DELETE FROM commits; -- {SCRIPT}",
    "kernel": f"gemm_{SCRIPT}' OR '1'='1",
    "suite": f"suite {SCRIPT}",
    "runner": f"runner' OR 1=1 -- {SCRIPT}",
    "gpu": f"H100 {SCRIPT}",
    "param": f'{SCRIPT}" onmouseover="alert(1)',
}


@pytest.fixture
def injected(settings: Settings) -> Iterator[tuple[LiveServer, list[dict]]]:
    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as admin:
        yield live, _history(admin, **INJECTED)


def test_injected_text_round_trips_verbatim_through_the_api(injected, engine: Engine) -> None:
    live, docs = injected
    head = docs[-1]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Run)).scalar_one() == 6
        assert conn.execute(select(func.count()).select_from(Result)).scalar_one() == 6
    with live.client() as client:
        run = client.get(f"/api/v1/runs/{head['run_id']}").json()
        assert (run["branch"], run["suite"]) == (INJECTED["branch"], INJECTED["suite"])
        assert run["gpu_name"] == INJECTED["gpu"]
        metrics = client.get(
            f"/api/v1/commits/{head['commit']['sha']}/metrics",
            params={"branch": INJECTED["branch"]},
        ).json()
        assert metrics["commit"]["message"] == INJECTED["message"]
        assert metrics["commit"]["author_name"] == INJECTED["author"]
        assert metrics["branch"] == INJECTED["branch"]
        (workload,) = metrics["workloads"]
        assert workload["params"]["note"] == INJECTED["param"]
        assert [k["kernel"] for k in workload["kernels"]] == [INJECTED["kernel"]]
        assert workload["kernels"][0]["metrics"][0]["verdict"] == "regressed"
        # Filters that carry the injections find exactly what they name, and no more.
        series = client.get(
            "/api/v1/series", params={"kernel": INJECTED["kernel"], "branch": INJECTED["branch"]}
        ).json()
        assert len(series["points"]) == 6
        assert client.get("/api/v1/series", params={"kernel": "x' OR '1'='1"}).status_code == 404
        jobs = client.get("/api/v1/jobs", params={"repository": "a' OR 1=1 --"})
        assert jobs.status_code == 404
        alerts = client.get("/api/v1/alerts").json()
        assert alerts and alerts[0]["series"]["kernel"] == INJECTED["kernel"]
        assert alerts[0]["branch"] == INJECTED["branch"]
        twin = client.get(f"/commits/{head['commit']['sha']}.json").json()
        assert {INJECTED["message"], INJECTED["kernel"], INJECTED["branch"]} <= _strings(twin)


def _strings(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()


def test_injected_text_is_escaped_in_every_page(injected) -> None:
    live, docs = injected
    head, base = docs[-1]["commit"]["sha"], docs[-2]["commit"]["sha"]
    branch = httpx.QueryParams({"branch": INJECTED["branch"]})
    pages = [
        "/",
        f"/commits/{head}?{branch}",
        f"/trends?repository=acme/kernels&{branch}",
        f"/compare?base={base}&head={head}",
        "/alerts?state=all",
        f"/trends?repository=acme/kernels&{branch}&kernel={SCRIPT}",
        "/commits/<img src=x onerror=alert(1)>",  # the error page repeats what it was given
    ]
    seen_escaped = 0
    for page in pages:
        answer = httpx.get(f"{live.url}{page}")
        assert answer.status_code in (200, 400, 404, 422), (page, answer.status_code)
        html = answer.text
        assert "text/html" in answer.headers["content-type"], page
        assert SCRIPT not in html, page
        assert "<img src=x" not in html, page
        assert '" onmouseover="' not in html, page
        # Inside the figures' JSON a closing tag cannot end the <script> block either.
        for block in re.findall(r"<script[^>]*>(.*?)</script>", html, flags=re.S):
            assert "</" not in block.replace("<\\/", ""), page
        seen_escaped += "&lt;script&gt;" in html or "\\u003cscript" in html or "<\\/script>" in html
    assert seen_escaped >= 4, "the injected names did not show on the pages"

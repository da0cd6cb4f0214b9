"""GitHub commit statuses after ingest, against a local stand-in for the GitHub API.

The real app serves over real HTTP on SQLite and PostgreSQL; a ThreadingHTTPServer on
127.0.0.1 records what the service sends to "GitHub" and answers as told. Nothing here talks to
the internet.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from dashboards.format import series_label
from service.core.settings import Settings
from service.integrations.github import api
from service.integrations.github import statuses as github
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, sha_for
from tests.documents import post_history as history
from tests.live_server import LiveServer

TOKEN = "ghp_test0123456789abcdefSECRET"
PUBLIC_URL = "https://kernelwatch.example.com"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Answer:
    status: int = 201
    delay: float = 0.0
    body: dict[str, Any] = field(default_factory=dict)


class FakeGitHub:
    """Records every request; answers from `script` in order, then 201."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.script: list[Answer] = []
        self._cond = threading.Condition()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._cond:
                    fake.requests.append(Recorded(self.path, dict(self.headers.items()), body))
                    answer = fake.script.pop(0) if fake.script else Answer()
                    fake._cond.notify_all()
                time.sleep(answer.delay)
                payload = json.dumps(answer.body or {"id": 1, **body}).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test)

            do_PATCH = do_POST  # a pull request's comment, updated in place

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Recorded]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def for_sha(self, sha: str) -> list[Recorded]:
        with self._cond:
            return [r for r in self.requests if r.path.endswith(f"/statuses/{sha}")]


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "RETRY_DELAYS", (0.05, 0.05))


def with_github(settings: Settings, fake: FakeGitHub, **overrides: Any) -> Settings:
    update: dict[str, Any] = {
        "github_token": SecretStr(TOKEN),
        "github_api_url": fake.url,
        "public_url": PUBLIC_URL,
        "github_timeout_seconds": 2.0,
    }
    update.update(overrides)
    return settings.model_copy(update=update)


@contextmanager
def serve(settings: Settings) -> Iterator[httpx.Client]:
    from service.api.app import create_app

    with LiveServer(create_app(settings, migrate=False)) as live, live.client(ADMIN_TOKEN) as c:
        yield c


def head_of(labels: list[str], **kw: Any) -> dict[str, Any]:
    return document(
        commit="head", parents=labels[-1:], ancestors=labels[::-1], minutes=100, seed=99, **kw
    )


def wait_for_log(caplog: pytest.LogCaptureFixture, needle: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in caplog.text:
            return
        time.sleep(0.02)
    raise AssertionError(f"no log line with {needle!r} in:\n{caplog.text}")


def test_a_regression_is_a_failure_naming_the_worst_series(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    with serve(with_github(settings, fake_github)) as client:
        labels = history(client, 8, {"slower": 100.0, "same": 100.0})
        fake_github.wait_for(8)
        head = head_of(labels, medians={"slower": 107.8, "same": 100.0})
        assert client.post("/api/v1/runs", json=head).status_code == 201
        fake_github.wait_for(9)

    first = fake_github.for_sha(sha_for("c0"))
    assert [r.body["state"] for r in first] == ["success"]
    assert first[0].body["description"] == "2 new"
    assert fake_github.for_sha(sha_for("c7"))[0].body["description"] == "2 unchanged"

    (sent,) = fake_github.for_sha(sha_for("head"))
    assert sent.path == f"/repos/acme/kernels/statuses/{sha_for('head')}"
    assert set(sent.body) == {"state", "description", "context", "target_url"}
    assert sent.body["state"] == "failure"
    assert sent.body["context"] == "kernelwatch/kernels"
    assert sent.body["target_url"] == f"{PUBLIC_URL}/commits/{sha_for('head')}"
    assert re.fullmatch(
        r"1 regressed, 1 unchanged \(gemm_fwd 1024³ slower \+7\.\d%\)", sent.body["description"]
    ), sent.body["description"]
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["content-type"] == "application/json"


def _counted(doc: dict[str, Any], instructions: float, policy: str) -> dict[str, Any]:
    doc["work_changes"] = policy
    for w in doc["workloads"]:
        sectors = {"value": instructions / 50, "unit": "sector"}
        metrics = {  # two counters of one kernel grow: one kernel with more work
            "smsp__inst_executed.sum": {
                "value": instructions,
                "unit": "inst",
                "label": "instructions executed",
            },  # as the runner sends it
            "lts__t_sectors_srcunit_tex_op_read.sum": sectors,
        }
        w["ncu"] = {"status": "ok", "kernels": [{"kernel": w["kernels"][0], "metrics": metrics}]}
    return doc


@pytest.mark.parametrize(
    ("policy", "state", "description"),
    [
        ("notice", "success", "1 unchanged"),
        (
            "fail",
            "failure",
            "1 more work, 1 unchanged (gemm_fwd 1024³ k: instructions executed +3.0%)",
        ),
    ],
)
def test_more_work_fails_the_status_only_where_the_suite_opts_in(
    settings: Settings, fake_github: FakeGitHub, policy: str, state: str, description: str
) -> None:
    with serve(with_github(settings, fake_github)) as client:
        base = _counted(document(commit="c0", medians={"k": 100.0}), 1e6, policy)
        assert client.post("/api/v1/runs", json=base).status_code == 201
        fake_github.wait_for(1)
        head = document(commit="head", parents=["c0"], ancestors=["c0"], minutes=5, seed=3,
                        medians={"k": 100.0})  # fmt: skip
        assert client.post("/api/v1/runs", json=_counted(head, 1.03e6, policy)).status_code == 201
        fake_github.wait_for(2)
    (sent,) = fake_github.for_sha(sha_for("head"))
    assert (sent.body["state"], sent.body["description"]) == (state, description)


def test_no_token_no_request(settings: Settings, fake_github: FakeGitHub) -> None:
    configured = with_github(settings, fake_github, github_token=None)
    with serve(configured) as client:
        assert client.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        time.sleep(0.5)
    assert fake_github.requests == []


def test_a_repository_not_named_like_github_gets_no_status(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    with serve(with_github(settings, fake_github)) as client:
        doc = document(commit="a", repository="local-kernels")
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        assert client.post("/api/v1/runs", json=document(commit="b")).status_code == 201
        fake_github.wait_for(1)
        time.sleep(0.3)
    assert [r.path for r in fake_github.requests] == [
        f"/repos/acme/kernels/statuses/{sha_for('b')}"
    ]


def test_a_duplicate_post_reports_nothing_again(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    doc = document(commit="a")
    with serve(with_github(settings, fake_github)) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        fake_github.wait_for(1)
        assert client.post("/api/v1/runs", json=doc).status_code == 200
        assert client.post("/api/v1/runs", json=document(commit="b")).status_code == 201
        fake_github.wait_for(2)
        time.sleep(0.3)
    assert len(fake_github.for_sha(sha_for("a"))) == 1
    assert len(fake_github.for_sha(sha_for("b"))) == 1


def test_the_answer_does_not_wait_for_github(settings: Settings, fake_github: FakeGitHub) -> None:
    fake_github.script = [Answer(201, delay=3.0)]
    with serve(with_github(settings, fake_github, github_timeout_seconds=10.0)) as client:
        started = time.monotonic()
        assert client.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        assert time.monotonic() - started < 2.0
        fake_github.wait_for(1)


def test_a_github_500_is_retried(
    settings: Settings, fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service.integrations.github.statuses")
    fake_github.script = [Answer(500, body={"message": "Server Error"}), Answer(201)]
    with serve(with_github(settings, fake_github)) as client:
        assert client.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        first, second = fake_github.wait_for(2)
        wait_for_log(caplog, "success (201)")
    assert first.body == second.body
    assert first.path == second.path
    assert "answered 500" in caplog.text
    assert TOKEN not in caplog.text


def test_a_timeout_is_retried(
    settings: Settings, fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service.integrations.github.statuses")
    fake_github.script = [Answer(201, delay=1.5), Answer(201)]
    with serve(with_github(settings, fake_github, github_timeout_seconds=0.3)) as client:
        assert client.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        fake_github.wait_for(2)
        wait_for_log(caplog, "success (201)")
    assert "timed out (attempt 1)" in caplog.text


def test_persistent_5xx_gives_up_after_three_attempts(
    settings: Settings, fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service.integrations.github.statuses")
    fake_github.script = [Answer(502), Answer(503), Answer(500), Answer(201)]
    with serve(with_github(settings, fake_github)) as client:
        assert client.post("/api/v1/runs", json=document(commit="a")).status_code == 201
        fake_github.wait_for(3)
        wait_for_log(caplog, "status not posted")
        time.sleep(0.3)
    assert len(fake_github.requests) == 3
    assert "answered 500" in caplog.text


def test_a_github_401_is_logged_and_the_run_is_still_stored(
    settings: Settings, fake_github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    # Everything that might log a request, at its most talkative.
    for name in ("service", "httpx", "httpcore", "uvicorn"):
        caplog.set_level(logging.DEBUG, logger=name)
    fake_github.script = [Answer(401, body={"message": "Bad credentials"})]
    configured = with_github(settings, fake_github)
    doc = document(commit="a")
    with serve(configured) as client:
        answer = client.post("/api/v1/runs", json=doc)
        assert answer.status_code == 201
        fake_github.wait_for(1)
        wait_for_log(caplog, "401")
        time.sleep(0.3)
        assert client.get(f"/api/v1/runs/{doc['run_id']}").status_code == 200
    assert len(fake_github.requests) == 1  # a 4xx is not retried
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("401" in r.getMessage() and "Bad credentials" in r.getMessage() for r in errors)
    assert TOKEN not in caplog.text
    assert TOKEN not in answer.text
    assert TOKEN not in repr(configured)


def test_a_failed_build_is_a_failure(settings: Settings, fake_github: FakeGitHub) -> None:
    with serve(with_github(settings, fake_github)) as client:
        labels = history(client, 2, {"a": 100.0, "b": 50.0})
        head = head_of(labels)
        head.update(status="build_failed", workloads=[])
        head["build"].update(status="failed", log_tail="gemm.cu(12): error: expected a ';'")
        assert client.post("/api/v1/runs", json=head).status_code == 201
        fake_github.wait_for(3)
    (sent,) = fake_github.for_sha(sha_for("head"))
    assert sent.body["state"] == "failure"
    assert sent.body["description"] == "build failed, 2 broken (gemm_fwd 1024³ a: the build failed)"


def test_a_correctness_failure_without_baseline_is_a_failure(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    doc = document(commit="a", medians={"a": 100.0, "b": 100.0})
    broken = doc["workloads"][1]
    broken.update(status="correctness_failed", timing=None, error="relative L2 error 0.3")
    broken["correctness"].update(passed=False, error_norm=0.3)
    with serve(with_github(settings, fake_github)) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        (sent,) = fake_github.wait_for(1)
    assert sent.body["state"] == "failure"
    assert sent.body["description"] == "1 broken, 1 new (gemm_fwd 1024³ b: correctness failed)"


def test_a_failed_run_with_nothing_to_blame_is_an_error(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    doc = document(commit="a")
    doc.update(status="failed", workloads=[], log_tail="CUDA error: device not ready")
    with serve(with_github(settings, fake_github, public_url=None)) as client:
        assert client.post("/api/v1/runs", json=doc).status_code == 201
        (sent,) = fake_github.wait_for(1)
    assert sent.body == {
        "state": "error",
        "description": "the run failed",
        "context": "kernelwatch/kernels",
    }


def test_a_clean_second_gpu_does_not_hide_a_regression_on_the_first(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    def on(gpu: str, doc: dict[str, Any]) -> dict[str, Any]:
        doc["environment"]["gpu"]["name"] = gpu
        doc["environment"]["fingerprint"] = "aa" * 8 if gpu == "H100" else "bb" * 8
        return doc

    with serve(with_github(settings, fake_github)) as client:
        labels: list[str] = []
        for i in range(4):
            for gpu in ("H100", "A100"):
                doc = document(
                    commit=f"c{i}",
                    parents=labels[-1:],
                    ancestors=labels[::-1],
                    minutes=i,
                    medians={"k": 100.0},
                    seed=i,
                )
                assert client.post("/api/v1/runs", json=on(gpu, doc)).status_code == 201
            labels.append(f"c{i}")
        slow = on("H100", head_of(labels, medians={"k": 110.0}))
        assert client.post("/api/v1/runs", json=slow).status_code == 201
        fake_github.wait_for(9)
        fine = on("A100", head_of(labels, medians={"k": 100.0}))
        assert client.post("/api/v1/runs", json=fine).status_code == 201
        fake_github.wait_for(10)
    first, second = fake_github.for_sha(sha_for("head"))
    assert first.body["state"] == second.body["state"] == "failure"
    assert re.fullmatch(
        r"1 regressed, 1 unchanged \(gemm_fwd 1024³ k \+10\.\d% on H100\)",
        second.body["description"],
    ), second.body["description"]


def test_labels_and_the_140_character_limit() -> None:
    def label(workload, params, kernel):
        return series_label(workload, params, kernel, compact=True)

    params = {"m": 1024, "n": 1024, "k": 1024, "act": "gelu"}
    assert label("gemm_fwd", params, "gemm_bias_act_f32") == "gemm_fwd 1024³ gelu gemm_bias_act_f32"
    assert label("gemm_fwd", params, "gelu") == "gemm_fwd 1024³ gelu"
    assert label("adamw", {"n": 4096.0, "fused": True}, None) == "adamw 4096 fused=true"
    assert label("transpose", {"rows": 8192, "cols": 512}, "t") == "transpose 8192×512 t"
    long = "x" * 200
    assert len(github.cut(long)) == 140
    assert github.cut(long).endswith("…")
    assert github.cut("short") == "short"
    assert api.is_github_repository("acme/kernels")
    assert api.is_github_repository("my-org/kernels.cuda")
    for name in ("kernels", "acme/kernels/extra", "/kernels", "acme/", "acme/.."):
        assert not api.is_github_repository(name), name


def test_a_regressed_measure_is_said_in_the_status_as_a_notice(
    settings: Settings, fake_github: FakeGitHub
) -> None:
    """Peak memory +50% with the duration unchanged: the status says it, and stays a success
    (a measure's verdict is a notice until its alerts come)."""

    def with_peak(doc: dict[str, Any], peak: float) -> dict[str, Any]:
        for process in doc["workloads"][0]["timing"]["processes"]:
            process["peak_memory_bytes"] = int(peak)
        return doc

    with serve(with_github(settings, fake_github)) as client:
        base = with_peak(document(commit="c0", medians={"k": 100.0}), 1.07e9)
        assert client.post("/api/v1/runs", json=base).status_code == 201
        fake_github.wait_for(1)
        head = document(commit="head", parents=["c0"], ancestors=["c0"], minutes=5, seed=3,
                        medians={"k": 100.0})  # fmt: skip
        assert client.post("/api/v1/runs", json=with_peak(head, 1.61e9)).status_code == 201
        fake_github.wait_for(2)
    (sent,) = fake_github.for_sha(sha_for("head"))
    assert (sent.body["state"], sent.body["description"]) == (
        "success",
        "1 unchanged, 1 measure regressed (gemm_fwd 1024³ k: peak memory 1.07 GB → 1.61 GB "
        "(+50%), regressed)",
    )

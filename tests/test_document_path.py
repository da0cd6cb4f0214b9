"""One result document's path through the service, traced as it runs: from the route to its
verdict and alert, each module is entered from the modules above it and none calls back into
one that called it (docs/architecture.md draws the path; issue 20 asks for no return trips).

`pytest -s tests/test_document_path.py` prints the path as a tree of modules.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, post_history
from tests.live_server import LiveServer
from tests.test_architecture import circles

ROUTE = "service.api.routes.runs"
ROOT = Path(__file__).resolve().parents[1]


class CallTrace:
    """(caller module, callee module) for every call between two modules of the service while
    `recording`, in every thread started after `start` (the server's and its thread pool's)."""

    def __init__(self, route: str = ROUTE) -> None:
        self.edges: dict[tuple[str, str], int] = {}
        self.recording = False
        self.route = route

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.recording:
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("service."):
            return
        caller, under_route = None, callee == self.route
        up = frame.f_back
        while up is not None:  # the nearest module of ours above, and the route somewhere above
            name = up.f_globals.get("__name__", "")
            if caller is None and name.startswith("service."):
                caller = name
            under_route = under_route or name == self.route
            up = up.f_back
        # Only what the route does with the document: not the middleware's plumbing around it.
        if under_route and caller is not None and caller != callee:
            self.edges.setdefault((caller, callee), len(self.edges))

    def start(self) -> None:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)

    def stop(self) -> None:
        threading.setprofile(None)  # type: ignore[arg-type]
        sys.setprofile(None)


async def _inline(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The hop to a worker thread without the thread, so that the stack shows who called what."""
    return fn(*args, **kwargs)


def _leased(settings: Settings, live: LiveServer, sha: str) -> tuple[str, dict[str, Any]]:
    """A runner's token and its claim of a run job for `sha` (as a push would queue it)."""
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from service.models import Repository
    from service.store.jobs.queue import enqueue
    from tests.service.histories.test_step_and_fix import new_runner

    engine = create_engine(settings.database_url)
    with Session(engine) as session, session.begin():
        repository = session.scalar(select(Repository).where(Repository.name == "acme/kernels"))
        assert repository is not None
        enqueue(session, repository_id=repository.id, sha=sha, branch="main", label_sets=[{}],
                max_attempts=3)  # fmt: skip
    token = new_runner(engine, "trace-runner")
    engine.dispose()
    with live.client(token) as runner:
        answer = runner.post("/api/v1/jobs/claim")
        assert answer.status_code == 200, answer.text
    return token, answer.json()


def trace_one_document(
    settings: Settings, monkeypatch: Any, as_runner: bool = False
) -> dict[tuple[str, str], int]:
    """The calls between modules while a regressed document is posted after a short history
    (by an admin, or by a runner under its job's lease): stored, judged (a regression), an
    alert suspected and its confirmation queued."""
    from service.api.app import create_app
    from service.runs import arrival

    monkeypatch.setattr(arrival, "run_sync", _inline)
    tracer = CallTrace()
    tracer.start()
    try:
        with (
            LiveServer(create_app(settings, migrate=False)) as live,
            live.client(ADMIN_TOKEN) as client,
        ):
            labels = post_history(client, 6, {"gemm_bias_act_f32": 100.0})
            head = document(commit="head", parents=labels[-1:], ancestors=labels[::-1],
                            minutes=9, medians={"gemm_bias_act_f32": 125.0}, seed=9)  # fmt: skip
            poster = client
            if as_runner:
                token, claim = _leased(settings, live, head["commit"]["sha"])
                head["job_id"], head["lease_token"] = claim["job"]["id"], claim["attempt_token"]
                head["runner"] = None  # the token says which runner this is
                poster = live.client(token)
            tracer.recording = True
            answer = poster.post("/api/v1/runs", json=head)
            tracer.recording = False
            assert answer.status_code == 201, answer.text
            (alert,) = client.get("/api/v1/alerts").json()
            assert alert["state"] == "suspected"
            if as_runner:
                job = client.get(f"/api/v1/jobs/{claim['job']['id']}").json()
                assert job["state"] == "succeeded", job
                poster.close()
    finally:
        tracer.stop()
    return tracer.edges


def tree(edges: dict[tuple[str, str], int], root: str = ROUTE) -> list[str]:
    """The modules as the route reaches them, each under the first module that called it."""
    children: dict[str, list[str]] = defaultdict(list)
    for (caller, callee), _ in sorted(edges.items(), key=lambda e: e[1]):
        children[caller].append(callee)
    lines, seen = [], set()

    def walk(module: str, depth: int) -> None:
        lines.append("  " * depth + module + (" (above)" if module in seen else ""))
        if module in seen:
            return
        seen.add(module)
        for child in children[module]:
            walk(child, depth + 1)

    walk(root, 0)
    return lines


@pytest.mark.parametrize("as_runner", [False, True], ids=["admin", "runner under its lease"])
def test_a_document_passes_each_module_once(
    settings: Settings, monkeypatch: Any, as_runner: bool
) -> None:
    edges = trace_one_document(settings, monkeypatch, as_runner)
    print("\n" + "\n".join(tree(edges)))
    graph: dict[str, set[str]] = defaultdict(set)
    for caller, callee in edges:
        graph[caller].add(callee)
        graph.setdefault(callee, set())
    assert circles(dict(graph)) == [], "a module calls back into one that called it"
    # The order of docs/architecture.md's path: the route hands the document to service/runs/, which
    # stores it (service/store/) and has it judged (service/evaluation/), which computes with
    # service/analysis/; nothing below calls up.
    assert ("service.api.routes.runs", "service.runs.arrival") in edges
    if as_runner:  # runs/ holds the transaction: the lease, the store's plain writes, the job
        assert ("service.runs.arrival", "service.runs.runner_results") in edges
        assert ("service.runs.runner_results", "service.store.history.ingest") in edges
        assert ("service.runs.runner_results", "service.store.jobs.queue") in edges
    else:
        assert ("service.runs.arrival", "service.store.history.ingest") in edges
    assert ("service.runs.arrival", "service.evaluation.backlog") in edges
    assert ("service.evaluation.backlog", "service.evaluation.verdicts.evaluate") in edges
    assert ("service.evaluation.backlog", "service.evaluation.alerts.lifecycle") in edges
    assert any(c.startswith("service.analysis.") for _, c in edges)
    rank = {"api": 0, "runs": 1, "evaluation": 2, "store": 3, "analysis": 3}
    for caller, callee in edges:
        a, b = caller.split(".")[1], callee.split(".")[1]
        if a in rank and b in rank:
            assert rank[a] <= rank[b], f"{caller} calls up into {callee}"


IMPORTS = "service.api.routes.imports"
GBENCH = ROOT / "tests" / "service" / "runs" / "fixtures" / "gbench"


def test_an_imported_file_passes_each_module_once(settings: Settings, monkeypatch: Any) -> None:
    """Another tool's file arrives: read by service/runs/ (the format's reader), stored and
    judged as a runner's document is; nothing below calls up."""
    from service.api.app import create_app
    from service.api.routes import imports

    monkeypatch.setattr(imports, "run_in_threadpool", _inline)
    tracer = CallTrace(IMPORTS)
    tracer.start()
    try:
        with (
            LiveServer(create_app(settings, migrate=False)) as live,
            live.client(ADMIN_TOKEN) as client,
        ):
            for i, name in enumerate(("saxpy_base.json", "saxpy_slower.json")):
                tracer.recording = i == 1
                answer = client.post(
                    "/api/v1/imports/gbench",
                    params={"repo": "acme/kernels", "commit": f"{i + 1:x}" * 40,
                            "committed_at": f"2026-11-0{i + 1}T00:00:00Z"},
                    content=(GBENCH / name).read_bytes(),
                )  # fmt: skip
                tracer.recording = False
                assert answer.status_code == 201, answer.text
    finally:
        tracer.stop()
    edges = tracer.edges
    print("\n" + "\n".join(tree(edges, IMPORTS)))
    graph: dict[str, set[str]] = defaultdict(set)
    for caller, callee in edges:
        graph[caller].add(callee)
        graph.setdefault(callee, set())
    assert circles(dict(graph)) == [], "a module calls back into one that called it"
    assert (IMPORTS, "service.runs.importing") in edges
    assert ("service.runs.importing", "service.runs.imports.formats") in edges
    assert ("service.runs.importing", "service.store.history.ingest") in edges
    assert ("service.runs.importing", "service.evaluation.backlog") in edges


def test_the_trace_sees_a_call_back() -> None:
    edges = {("a.x", "b.y"): 0, ("b.y", "a.x"): 1}
    graph = {"a.x": {"b.y"}, "b.y": {"a.x"}}
    assert circles(graph) != [] and tree(edges, "a.x") == ["a.x", "  b.y", "    a.x (above)"]

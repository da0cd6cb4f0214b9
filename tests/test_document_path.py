"""One result document's path through the service, traced as it runs: from the route to its
verdict and alert, each module is entered from the modules above it and none calls back into
one that called it (docs/architecture.md draws the path; issue 20 asks for no return trips).

`pytest -s tests/test_document_path.py` prints the path as a tree of modules.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from types import FrameType
from typing import Any

from service.core.settings import Settings
from tests.conftest import ADMIN_TOKEN
from tests.documents import document, post_history
from tests.live_server import LiveServer
from tests.test_architecture import circles

ROUTE = "service.api.routes.runs"


class CallTrace:
    """(caller module, callee module) for every call between two modules of the service while
    `recording`, in every thread started after `start` (the server's and its thread pool's)."""

    def __init__(self) -> None:
        self.edges: dict[tuple[str, str], int] = {}
        self.recording = False

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.recording:
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("service."):
            return
        caller, under_route = None, callee == ROUTE
        up = frame.f_back
        while up is not None:  # the nearest module of ours above, and the route somewhere above
            name = up.f_globals.get("__name__", "")
            if caller is None and name.startswith("service."):
                caller = name
            under_route = under_route or name == ROUTE
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
    """run_in_threadpool without the thread, so that the stack shows who called what."""
    return fn(*args, **kwargs)


def trace_one_document(settings: Settings, monkeypatch: Any) -> dict[tuple[str, str], int]:
    """The calls between modules while a regressed document is posted after a short history:
    stored, judged (a regression), an alert suspected and its confirmation queued."""
    from service.api.app import create_app
    from service.runs import arrival

    monkeypatch.setattr(arrival, "run_in_threadpool", _inline)
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
            tracer.recording = True
            answer = client.post("/api/v1/runs", json=head)
            tracer.recording = False
            assert answer.status_code == 201, answer.text
            (alert,) = client.get("/api/v1/alerts").json()
            assert alert["state"] == "suspected"
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


def test_a_document_passes_each_module_once(settings: Settings, monkeypatch: Any) -> None:
    edges = trace_one_document(settings, monkeypatch)
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
    assert ("service.runs.arrival", "service.store.ingest") in edges
    assert ("service.runs.arrival", "service.evaluation.backlog") in edges
    assert ("service.evaluation.backlog", "service.evaluation.evaluate") in edges
    assert ("service.evaluation.backlog", "service.evaluation.alerts") in edges
    assert any(c.startswith("service.analysis.") for _, c in edges)
    rank = {"api": 0, "runs": 1, "evaluation": 2, "store": 3, "analysis": 3}
    for caller, callee in edges:
        a, b = caller.split(".")[1], callee.split(".")[1]
        if a in rank and b in rank:
            assert rank[a] <= rank[b], f"{caller} calls up into {callee}"


def test_the_trace_sees_a_call_back() -> None:
    edges = {("a.x", "b.y"): 0, ("b.y", "a.x"): 1}
    graph = {"a.x": {"b.y"}, "b.y": {"a.x"}}
    assert circles(graph) != [] and tree(edges, "a.x") == ["a.x", "  b.y", "    a.x (above)"]

"""Imports end to end: real Google Benchmark files posted to the API (SQLite and PostgreSQL)
and given to the `kernelwatch import` command; the second commit's import gets its verdicts,
pending while the level it is compared with has one run, settled by the third."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from service.models import Run
from tests.conftest import ADMIN_TOKEN
from tests.live_server import LiveServer
from tests.service.test_cli import BIN, _env

GBENCH = Path(__file__).parent / "fixtures" / "gbench"
REPO = "acme/kernels"
BASE, HEAD, NEXT = "a" * 40, "b" * 40, "c" * 40


def post(client: Any, name: str, commit: str, when: str, query: dict | None = None):
    params = {"repo": REPO, "commit": commit, "committed_at": when, **(query or {})}
    return client.post("/api/v1/imports/gbench", params=params,
                       content=(GBENCH / name).read_bytes())  # fmt: skip


def saxpy(metrics: dict[str, Any], kernel: str) -> dict[str, Any]:
    for w in metrics["workloads"]:
        for k in w["kernels"]:
            if k["kernel"] == kernel:
                return {"workload": w, "metric": k["metrics"][0]}
    raise AssertionError(f"{kernel} not at this commit")


def test_a_second_import_gets_verdicts_against_the_first(
    server: LiveServer, engine: Engine
) -> None:
    with server.client(ADMIN_TOKEN) as client:
        first = post(client, "saxpy_base.json", BASE, "2026-11-01T10:00:00Z")
        assert first.status_code == 201, first.text
        assert first.json()["results"] == 4  # 4 timed series; the error and the skip have none
        again = post(client, "saxpy_base.json", BASE, "2026-11-01T10:00:00Z")
        assert again.status_code == 200 and again.json()["stored"] is False
        second = post(client, "saxpy_slower.json", HEAD, "2026-11-02T10:00:00Z")
        assert second.status_code == 201, second.text
        pending = saxpy(client.get(f"/api/v1/commits/{HEAD}/metrics").json(), "BM_saxpy/262144")
        # One run of a level cannot say how far its runs wander: no red commit yet.
        assert pending["metric"]["verdict"] == "pending"
        assert "the next run of this line settles it" in pending["metric"]["analysis"]["note"]
        third = post(client, "saxpy_slower.json", NEXT, "2026-11-03T10:00:00Z")
        assert third.status_code == 201, third.text
        metrics = client.get(f"/api/v1/commits/{HEAD}/metrics").json()
    slower = saxpy(metrics, "BM_saxpy/262144")
    assert slower["workload"]["workload"] == "BM_saxpy"
    assert slower["workload"]["params"] == {"arg0": 262144}
    assert slower["metric"]["verdict"] == "regressed"
    assert slower["metric"]["baseline"]["commit"] == BASE
    assert slower["metric"]["change"] > 0.5  # saxpy's work done twice
    failed = [w for w in metrics["workloads"] if w["workload"] == "BM_fails"]
    assert failed and failed[0]["status"] == "failed"
    assert "could not be allocated" in failed[0]["error"]
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Run)) == 3


@pytest.mark.parametrize(
    ("query", "body", "status", "says"),
    [
        ({"commit": "xyz"}, "saxpy_base.json", 422, "commit"),
        ({"repo": "a b"}, "saxpy_base.json", 422, "repository"),
        ({"branch": "a..b"}, "saxpy_base.json", 422, "not a valid git branch name"),
        ({}, "README.md", 422, "cannot import this gbench file: not Google Benchmark JSON"),
    ],
)
def test_bad_imports_are_refused_and_store_nothing(
    server: LiveServer, engine: Engine, query: dict, body: str, status: int, says: str
) -> None:
    with server.client(ADMIN_TOKEN) as client:
        answer = post(client, body, BASE, "2026-11-01T10:00:00Z", query)
        target = {"repo": REPO, "commit": BASE}
        wrong = {"Authorization": "Bearer x"}
        unauthorised = client.post("/api/v1/imports/gbench", params=target, headers=wrong)
        unknown = client.post("/api/v1/imports/csv", params={"repo": REPO, "commit": BASE})
    assert answer.status_code == status and says in answer.text, answer.text
    assert unauthorised.status_code == 401
    assert unknown.status_code == 422
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Run)) == 0


def kernelwatch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BIN / "kernelwatch", *args], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_cli_imports_into_the_services_database(tmp_path: Path) -> None:
    common = ["import", "--format", "gbench", "--repo", REPO]
    done = kernelwatch(tmp_path, *common, "--commit", BASE, "--committed-at",
                       "2026-11-01T10:00:00Z", str(GBENCH / "saxpy_base.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported 4 results of saxpy_base.json" in done.stdout
    for commit, day in ((HEAD, "02"), (NEXT, "03")):
        when = f"2026-11-{day}T10:00:00Z"
        done = kernelwatch(tmp_path, *common, "--commit", commit, "--committed-at", when,
                           str(GBENCH / "saxpy_slower.json"))  # fmt: skip
        assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "data" / "kernelwatch.db") as conn:
        verdicts = dict(conn.execute(
            "SELECT s.kernel, v.verdict FROM verdicts v JOIN series s ON s.id = v.series_id "
            "JOIN runs r ON r.id = v.run_id JOIN commits c ON c.id = r.commit_id "
            "WHERE c.sha = ?", (HEAD,)).fetchall())  # fmt: skip
    assert verdicts["BM_saxpy/262144"] == "regressed"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--format", "csv"], "--format"),
        (["--commit", "123"], "--commit"),
        (["--repo", "a b"], "--repo"),
        (["--committed-at", "soon"], "--committed-at"),
        (["FILE=missing.json"], "no such file"),
        (["FILE=README.md"], "cannot import as gbench: not Google Benchmark JSON"),
    ],
)
def test_the_cli_refuses_bad_arguments_in_one_line(
    tmp_path: Path, args: list[str], says: str
) -> None:
    options = {"--format": "gbench", "--repo": REPO, "--commit": BASE}
    path = str(GBENCH / "saxpy_base.json")
    for arg in args:
        if arg.startswith("FILE="):
            path = str(GBENCH / arg[5:]) if arg != "FILE=missing.json" else "missing.json"
    pairs = dict(zip(args[::2], args[1::2], strict=False)) if not args[0].startswith("F") else {}
    options.update(pairs)
    flat = [x for kv in options.items() for x in kv]
    done = kernelwatch(tmp_path, "import", *flat, path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert says in line, line
    database = tmp_path / "data" / "kernelwatch.db"
    if database.exists():
        with sqlite3.connect(database) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_results_keep_the_files_units_and_note() -> None:
    raw = json.loads((GBENCH / "saxpy_base.json").read_text())
    assert raw["benchmarks"][0]["time_unit"] == "ns"  # what the series' unit comes from


NVBENCH_H100 = Path(__file__).parent / "fixtures" / "nvbench_h100"


def test_real_nvbench_files_with_their_sample_files_get_a_verdict(tmp_path: Path) -> None:
    """benchmarks/nvbench/copy_bench.cu on the H100 (its README): the slower build reads every
    element twice, 3.4x the time at 2^24 elements."""
    common = ["import", "--format", "nvbench", "--repo", REPO]
    done = kernelwatch(tmp_path, *common, "--commit", BASE, "--committed-at",
                       "2026-11-01T10:00:00Z", str(NVBENCH_H100 / "base.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported 4 results of base.json" in done.stdout
    for commit, day in ((HEAD, "02"), (NEXT, "03")):  # the next run settles the head's
        when = f"2026-11-{day}T10:00:00Z"
        done = kernelwatch(tmp_path, *common, "--commit", commit, "--committed-at", when,
                           str(NVBENCH_H100 / "slower.json"))  # fmt: skip
        assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "data" / "kernelwatch.db") as conn:
        rows = conn.execute(
            "SELECT s.params, v.verdict, res.n, res.median FROM verdicts v "
            "JOIN series s ON s.id = v.series_id JOIN runs r ON r.id = v.run_id "
            "JOIN commits c ON c.id = r.commit_id "
            "JOIN results res ON res.run_id = r.id AND res.series_id = s.id WHERE c.sha = ?",
            (HEAD,)).fetchall()  # fmt: skip
    got = {(p["T"], p["Elements"]): rest for p, *rest in
           ((json.loads(p), v, n, m) for p, v, n, m in rows)}  # fmt: skip
    assert got[("F32", 16777216)][:2] == ["regressed", 2786]  # every sample of its file
    assert got[("F64", 16777216)][0] == "regressed"
    assert 170 < got[("F32", 16777216)][2] < 190  # us, as nvbench's own table says (179.5)
    assert got[("F32", 65536)][1] == 100_000  # 121,280 samples thinned to what a document holds


def test_an_alert_nobody_can_confirm_is_closed_as_fixed_when_the_series_comes_back(
    server: LiveServer,
) -> None:
    """Imported results have no runner to confirm their regression: its alert stays suspected
    until a later import brings the series back, and then closes as fixed, as an open one
    would, its confirmation no longer waiting for a runner."""
    days = {BASE: "01", HEAD: "02", NEXT: "03", "d" * 40: "04"}
    files = {BASE: "saxpy_base.json", HEAD: "saxpy_slower.json", NEXT: "saxpy_slower.json",
             "d" * 40: "saxpy_base.json"}  # fmt: skip
    with server.client(ADMIN_TOKEN) as client:
        for commit, name in files.items():
            answer = post(client, name, commit, f"2026-11-{days[commit]}T10:00:00Z")
            assert answer.status_code == 201, answer.text
            if commit == NEXT:
                suspected = client.get("/api/v1/alerts", params={"state": "suspected"}).json()
                assert suspected and {a["commit"] for a in suspected} == {HEAD}
        alerts = [client.get(f"/api/v1/alerts/{a['id']}").json()
                  for a in client.get("/api/v1/alerts").json()
                  if a["commit"] == HEAD]  # fmt: skip
        jobs = client.get("/api/v1/jobs", params={"repository": REPO}).json()
    assert alerts and {(a["state"], a["fixed_by_commit"]) for a in alerts} == {("fixed", "d" * 40)}
    for alert in alerts:
        (last,) = alert["events"][-1:]
        assert (last["from_state"], last["to_state"]) == ("suspected", "fixed")
        assert f"fixed by {'d' * 12}" in last["note"] and "before any confirmation" in last["note"]
    confirmations = [j for j in jobs if j["kind"] == "confirm" and j["commit"] == HEAD]
    assert confirmations and {j["state"] for j in confirmations} == {"cancelled"}

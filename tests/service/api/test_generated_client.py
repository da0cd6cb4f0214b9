"""A client generated from the description works (issue 49, item 5): openapi-python-client
builds one from a live server's /openapi.json, and the main reads and a result post go through
it, on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import ADMIN_TOKEN
from tests.documents import document
from tests.live_server import LiveServer

PACKAGE = "kernelwatch_client"


def generate(spec: dict, where: Path) -> Path:
    """The client's package (a folder in `where`), generated from `spec` (no formatter run
    after it)."""
    (where / "openapi.json").write_text(json.dumps(spec))
    (where / "config.yml").write_text(f"package_name_override: {PACKAGE}\npost_hooks: []\n")
    generator = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run(
        [str(generator), "generate", "--path", "openapi.json", "--config", "config.yml",
         "--meta", "none", "--output-path", PACKAGE],
        cwd=where, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    return where / PACKAGE


def test_a_generated_client_posts_a_result_and_reads_it_back(
    server: LiveServer, tmp_path: Path
) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    package = generate(spec, tmp_path)
    sys.path.insert(0, str(package.parent))
    try:
        client_module = importlib.import_module(f"{PACKAGE}")
        api = f"{PACKAGE}.api"
        post_run = importlib.import_module(f"{api}.runs.post_run_api_v1_runs_post")
        list_runs = importlib.import_module(f"{api}.runs.list_runs_api_v1_runs_get")
        list_commits = importlib.import_module(f"{api}.commits.list_commits_api_v1_commits_get")
        metrics = importlib.import_module(
            f"{api}.commits.get_commit_metrics_api_v1_commits_sha_metrics_get"
        )
        series = importlib.import_module(f"{api}.series.get_series_api_v1_series_get")
        alerts = importlib.import_module(f"{api}.alerts.list_alerts_api_v1_alerts_get")
        run_document = importlib.import_module(f"{PACKAGE}.models.run_document").RunDocument
        with client_module.AuthenticatedClient(base_url=server.url, token=ADMIN_TOKEN) as client:
            doc = document(commit="generated", medians={"gemm_bias_act_f32": 100.0})
            stored = post_run.sync_detailed(client=client, body=run_document.from_dict(doc))
            assert stored.status_code == 201, stored.content
            (run,) = list_runs.sync(client=client, repository="acme/kernels")
            assert run.commit == doc["commit"]["sha"] and run.analysed
            (commit,) = list_commits.sync(client=client)
            assert commit.sha == doc["commit"]["sha"] and commit.runs == 1
            measured = metrics.sync(client=client, sha=commit.sha)
            (workload,) = measured.workloads
            params = json.dumps(doc["workloads"][0]["params"])
            history = series.sync(client=client, workload=workload.workload, workload_params=params)
            assert history.series.workload == workload.workload and len(history.points) == 1
            assert alerts.sync(client=client) == []
    finally:
        sys.path.remove(str(package.parent))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]

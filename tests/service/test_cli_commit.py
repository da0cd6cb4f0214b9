"""`kernelwatch commit SHA`: the demo's story as the API tells it, in lines and as JSON; a history
posted over HTTP on SQLite and PostgreSQL; bad input in one line, exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from service import cli
from service.api.app import create_app
from service.core.settings import Settings
from service.demo import demo_settings, load_demo
from tests.conftest import ADMIN_TOKEN
from tests.history import Line
from tests.live_server import LiveServer
from tests.service.histories.test_step_and_fix import KERNELS, STEPPED, settle, step_and_fix
from tests.service.test_demo import BROKEN, FIX, MANIFEST, OPEN, REGRESSION

CULPRIT = [e for e in MANIFEST["runs"] if e["kind"] == "bisect"][-1]["commit"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    """The demo's history loaded, and its API behind a real socket: (settings, URL)."""
    given = Settings(data_dir=tmp_path_factory.mktemp("demo"))
    load_demo(given, log=lambda _: None)
    settings = demo_settings(given)
    with LiveServer(create_app(settings)) as live:
        yield settings, live.url


def kernelwatch(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    *args: str,
) -> tuple[int, str, str]:  # fmt: skip
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", settings.effective_database_url)
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(settings.data_dir))
    code = cli.main(["commit", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_demo_story_is_the_apis(demo, capsys, monkeypatch) -> None:
    """Each commit's line of counts, its changed series and their alerts and causes, and what
    bisection said: found at the culprit, moved away from the push's head."""
    settings, url = demo
    culprit = httpx.get(f"{url}/api/v1/commits/{CULPRIT}/metrics").json()
    code, out, _ = kernelwatch(settings, capsys, monkeypatch, CULPRIT[:10], "--fail-on-regression")
    assert code == 3
    lines = out.splitlines()
    assert lines[0].endswith(f"{CULPRIT[:10]} on main: 2 regressed (found here by bisection)")
    for found in culprit["found_here"]:
        said = next(ln for ln in lines if ln.lstrip().startswith(f"regressed  {found['workload']}"))
        assert f"{found['change'] * 100:+.1f}%, found here by bisection (measured at " \
            f"{OPEN[:10]})" in said  # fmt: skip
        alert = lines[lines.index(said) + 1]
        assert f"alert {found['alert_id']} (open): " in alert
        assert "gemm_splitk_epilogue" in alert and "uncoalesced" in alert
    code, out, _ = kernelwatch(settings, capsys, monkeypatch, OPEN, "--fail-on-regression")
    assert code == 3  # the push's head fails with its push
    head = httpx.get(f"{url}/api/v1/commits/{OPEN}/metrics").json()
    assert head["bisected"] == {CULPRIT: 2}
    assert out.splitlines()[0].endswith(
        f"2 unchanged, 2 regressed here came in at {CULPRIT[:10]} (bisected)"
    )
    assert out.count(f"came in at {CULPRIT[:10]} (bisected)\n") == 3  # the counts, 2 series
    _, out, _ = kernelwatch(settings, capsys, monkeypatch, REGRESSION)
    assert "1 regressed, 3 unchanged" in out and "transpose" in out and "bank conflicts" in out
    assert "alert 1 (fixed)" in out
    _, out, _ = kernelwatch(settings, capsys, monkeypatch, FIX)
    assert "1 improved" in out and "-50.8%" in out
    code, out, _ = kernelwatch(settings, capsys, monkeypatch, BROKEN, "--fail-on-regression")
    assert code == 0
    assert "1 broken, 3 unchanged" in out and "broken     dropout" in out
    assert "(correctness failed)" in out


def test_json_is_the_apis_answer(demo, capsys, monkeypatch) -> None:
    settings, url = demo
    for sha in (CULPRIT, OPEN, BROKEN):
        code, out, _ = kernelwatch(settings, capsys, monkeypatch, sha, "--json")
        api = httpx.get(f"{url}/api/v1/commits/{sha}/metrics", params={"ncu": "none"}).json()
        assert code == 0 and json.loads(out) == api


def test_bad_input_gets_one_line_and_exit_1(demo, capsys, monkeypatch) -> None:
    settings, _ = demo
    cases = {
        ("zz",): "'zz' is not a commit sha: give 4 to 40 hex digits",
        ("abcd",): "no commit abcd has results yet",
        (OPEN, "--repo", "acme/other"): f"no commit {OPEN} in acme/other has results yet",
        (OPEN, "--repo", "no such"): "--repo 'no such': ",
        (OPEN, "--branch", "no such"): "--branch 'no such': 'no such' is not a valid git branch",
        (OPEN, "--branch", "other"): "kernelwatch/demo-kernels has no results on branch 'other'; "
        "its branches: main",
    }
    for args, said in cases.items():
        code, out, err = kernelwatch(settings, capsys, monkeypatch, *args)
        assert (code, out) == (1, ""), args
        assert err.startswith(f"kernelwatch: {said}") and err.count("\n") == 1, err
        assert "Traceback" not in err


def test_a_step_posted_over_http_reads_the_same_on_either_database(
    settings: Settings, engine: Engine, server: LiveServer, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    step, n = 6, 9
    at = step_and_fix(n, step, n)
    line = Line(KERNELS, repository="acme/cli", seed=2)
    with server.client(ADMIN_TOKEN) as client:
        for i in range(n):
            assert client.post("/api/v1/runs", json=line.document(i, at[i])).status_code == 201
        settle(engine)
        api = client.get(f"/api/v1/commits/{line.sha(step)}/metrics").json()
    stepped = next(mp for w in api["workloads"] for k in w["kernels"] for mp in k["metrics"]
                   if k["kernel"] == STEPPED)  # fmt: skip
    code, out, _ = kernelwatch(settings, capsys, monkeypatch, line.sha(step)[:8],
                               "--fail-on-regression")  # fmt: skip
    assert stepped["verdict"] == "regressed" and code == 3
    said = next(ln for ln in out.splitlines() if ln.lstrip().startswith("regressed "))
    assert f"· {STEPPED}  {stepped['change'] * 100:+.1f}%" in said
    code, out, _ = kernelwatch(settings, capsys, monkeypatch, line.sha(step + 1),
                               "--fail-on-regression")  # fmt: skip
    assert code == 0 and "regressed" not in out


def test_a_reader_that_stops_reading_ends_it_quietly(demo) -> None:
    """`kernelwatch commit SHA --json | true`, a reader gone before the first line (as `head`
    is after its lines): no word of a broken pipe."""
    settings, _ = demo
    exe = Path(sys.executable).with_name("kernelwatch")
    env = {"KERNELWATCH_DATABASE_URL": settings.effective_database_url,
           "KERNELWATCH_DATA_DIR": str(settings.data_dir), "PATH": "/usr/bin:/bin"}  # fmt: skip
    line = f"'{exe}' commit {OPEN} --json | true; echo \"${{PIPESTATUS[0]}}\""
    piped = subprocess.run(line,
                           shell=True, executable="/bin/bash", env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert (piped.stdout, piped.stderr) == ("0\n", "")

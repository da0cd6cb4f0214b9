"""The `kernelwatch` command as a user runs it: separate processes, real sockets."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWATCH_")}
    env["KERNELWATCH_DATA_DIR"] = str(tmp_path / "data")
    env.update(extra)
    return env


def test_db_upgrade_creates_the_embedded_sqlite_database(tmp_path: Path) -> None:
    done = subprocess.run(
        [BIN / "kernelwatch", "db", "upgrade"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout
    assert (tmp_path / "data" / "kernelwatch.db").exists()


def test_serve_answers_on_the_given_port(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [BIN / "kernelwatch", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "kernelwatch serve did not come up"
                time.sleep(0.2)
        assert answer.status_code == 200
        health = answer.json()
        assert (health["status"], health["database"]) == ("ok", "sqlite")
        assert "GiB free in" in health["disk"]
        empty = httpx.get(f"http://127.0.0.1:{port}/api/v1/commits/{'a' * 40}/metrics")
        assert empty.status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stdout:
            proc.stdout.close()


def test_unknown_subcommand_exits_non_zero(tmp_path: Path) -> None:
    done = subprocess.run(
        [BIN / "kernelwatch", "frobnicate"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def test_runner_token_create_and_revoke(tmp_path: Path) -> None:
    from service.api.app import create_app
    from service.core.settings import Settings
    from tests.live_server import LiveServer

    env = _env(tmp_path)

    def kernelwatch(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BIN / "kernelwatch", *args], env=env, capture_output=True, text=True, timeout=60
        )

    created = kernelwatch("runner-token", "create", "h100-a", "--labels", "gpu=h100")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("kwr_")
    assert "shown once" in created.stderr
    assert kernelwatch("runner-token", "create", "h100-a").returncode == 1
    assert "bad" in kernelwatch("runner-token", "create", "x", "--labels", "bad").stderr
    queued = kernelwatch(
        "enqueue",
        "--repo",
        "acme/k",
        "--sha",
        "a" * 40,
        "--clone-url",
        "https://example.com/acme/k.git",
    )
    assert queued.returncode == 0, queued.stderr
    settings = Settings(data_dir=tmp_path / "data")
    with LiveServer(create_app(settings)) as live, live.client(token) as client:
        claimed = client.post("/api/v1/jobs/claim")
        assert claimed.status_code == 200
        assert claimed.json()["job"]["commit"] == "a" * 40
        assert kernelwatch("runner-token", "revoke", "h100-a").returncode == 0
        assert client.post("/api/v1/runners/heartbeat").status_code == 401
    assert kernelwatch("runner-token", "revoke", "nobody").returncode == 1


SHA = "a" * 40


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["enqueue", "--repo", "acme/k", "--sha", SHA, "--clone-url=-oops"],
         "--clone-url: String should match pattern"),
        (["enqueue", "--repo", "acme/k", "--sha", "abc"], "--sha: String should have at least 40"),
        (["enqueue", "--repo", "bad repo", "--sha", SHA, "--clone-url", "https://x/y.git"],
         "--repo: String should match pattern"),
        (["enqueue", "--repo", "acme/k", "--sha", SHA, "--branch", ""],
         "--branch: Value error, '' is not a valid git branch name"),
        (["enqueue", "--repo", "acme/k", "--sha", SHA, "--labels", "nokey"],
         "label 'nokey' is not key=value"),
        (["repo", "runner-labels", "acme/k", "--clone-url=-x"],
         "--clone-url: String should match pattern"),
        (["repo", "runner-labels", "acme/unknown", "gpu=h100"],
         "no repository 'acme/unknown'; pass --clone-url to register it"),
        (["enqueue", "--repo", "notarepo", "--sha", SHA],
         "no repository 'notarepo'; pass --clone-url to register it"),
        (["enqueue", "--repo", "acme/k", "--sha", SHA, "--branch", "no such branch"],
         "'no such branch' is not a valid git branch name"),
        (["runner-token", "create", ""], "invalid runner name ''"),
        (["runner-token", "create", "gpu-1", "--labels", ",".join(f"k{i}=v" for i in range(11))],
         "at most 10"),
    ],
)  # fmt: skip
def test_bad_arguments_get_one_line_and_change_nothing(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """As the API refuses them (the same models), in one line, exit 1, nothing stored."""
    done = subprocess.run([BIN / "kernelwatch", *args], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("kernelwatch: ") and says in line, line
    database = tmp_path / "data" / "kernelwatch.db"
    if database.exists():
        with sqlite3.connect(database) as conn:
            counts = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                      for t in ("jobs", "repositories", "runners")]  # fmt: skip
        assert counts == [0, 0, 0]


def test_serve_refuses_a_database_it_cannot_reach_in_one_line(tmp_path: Path) -> None:
    """Not "startup complete" and tracebacks from its loops: exit 1, the cause named."""
    env = _env(tmp_path, KERNELWATCH_DATABASE_URL="postgresql://kw@127.0.0.1:9/kernelwatch",
               KERNELWATCH_DATABASE_CONNECT_TIMEOUT_SECONDS="2")  # fmt: skip
    done = subprocess.run([BIN / "kernelwatch", "serve", "--port", str(_free_port())], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("kernelwatch: the database at postgresql+psycopg://kw@127.0.0.1:9/")
    assert "does not answer (" in line and line.endswith("; not serving"), line
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.postgres
def test_admin_commands_on_a_database_with_no_schema_say_what_to_run(tmp_path: Path) -> None:
    """runner-token, enqueue, repo and import on a PostgreSQL never migrated: one line naming
    `kernelwatch db upgrade`, exit 1, no UndefinedTable traceback."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from tests.conftest import _postgres_admin_url

    admin_url = _postgres_admin_url()
    if admin_url is None:
        pytest.skip("KERNELWATCH_TEST_POSTGRES_URL is not set")
    name = f"kw_empty_{os.getpid()}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        env = _env(tmp_path, KERNELWATCH_DATABASE_URL=url)
        bench = next((ROOT / "tests/service/runs/fixtures/gbench").glob("*.json"))
        for args in (["runner-token", "create", "gpu-1"],
                     ["enqueue", "--repo", "acme/k", "--sha", SHA],
                     ["repo", "runner-labels", "acme/k"],
                     ["import", "--format", "gbench", "--repo", "acme/k", "--commit", SHA,
                      str(bench)]):  # fmt: skip
            done = subprocess.run([BIN / "kernelwatch", *args], env=env, capture_output=True,
                                  text=True, timeout=60)  # fmt: skip
            assert done.returncode == 1, (args, done.stderr)
            (line,) = done.stderr.strip().splitlines()
            assert "run `kernelwatch db upgrade` first" in line, (args, line)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_db_upgrade_makes_no_folder_a_database_url_names(tmp_path: Path) -> None:
    """A typo in KERNELWATCH_DATABASE_URL's path: one line, and nothing made where it points
    (the default database's folder, KERNELWATCH_DATA_DIR, is made: the first test above)."""
    missing = tmp_path / "no" / "such" / "dir"
    env = _env(tmp_path, KERNELWATCH_DATABASE_URL=f"sqlite:///{missing}/x.db")
    done = subprocess.run([BIN / "kernelwatch", "db", "upgrade"], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "kernelwatch: the folder of the SQLite database KERNELWATCH_DATABASE_URL names does not "
        f"exist (create it, or name another): {missing}"
    )
    assert not (tmp_path / "no").exists()

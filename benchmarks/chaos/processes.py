"""The processes of a chaos run: scratch databases, `kernelwatch serve`, agents, tokens, jobs."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ADMIN = "chaos-admin-token"
REPOSITORY = "acme/chaos"
EXAMPLE = ROOT / "docs" / "result-document.example.json"
# Short leases, so that the job of a killed agent comes back within seconds.
SERVICE_ENV = {
    "KERNELWATCH_ADMIN_TOKEN": ADMIN,
    "KERNELWATCH_LEASE_SECONDS": "6",
    "KERNELWATCH_REAPER_INTERVAL_SECONDS": "0.5",
    "KERNELWATCH_MAX_ATTEMPTS": "50",
    "KERNELWATCH_ANALYSIS_DELAY_SECONDS": "0.2",
    "KERNELWATCH_ANALYSIS_POLL_SECONDS": "1",
    "KERNELWATCH_LOG_LEVEL": "WARNING",
    "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS": "1",  # its repository is a local path
}


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def wait_until(what: str, ready: Callable[[], bool], timeout: float, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- databases and processes ---------------------------------------------------------------------


@contextlib.contextmanager
def scratch_database(kind: str, postgres_url: str | None, workdir: Path) -> Iterator[str]:
    """An empty, migrated database: a SQLite file in workdir or a new PostgreSQL database."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from service.core.db import create_db_engine
    from service.core.migrate import upgrade
    from service.core.settings import Settings

    if kind == "sqlite":
        url = f"sqlite:///{workdir / 'kernelwatch.db'}"
        engine = create_db_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
        return
    admin_url = Settings(database_url=postgres_url).database_url
    if admin_url is None:
        raise SystemExit(
            "--database postgres needs --postgres-url or KERNELWATCH_TEST_POSTGRES_URL"
        )
    name = f"kw_chaos_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        engine = create_db_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def clean_env(db_url: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELWATCH_")}
    return (
        env
        | SERVICE_ENV
        | {
            "KERNELWATCH_DATABASE_URL": db_url,
            "KERNELWATCH_DATA_DIR": str(workdir / "data"),
        }
    )


class Process:
    """A child process in its own session, logging to a file; killable, restartable."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.command, self.env, self.log_path = command, env, log_path
        self.proc: subprocess.Popen | None = None
        self.groups: list[int] = []

    def start(self) -> Process:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                self.command,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.groups.append(self.proc.pid)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL to the process alone, as the OOM killer or a crash would end it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM and wait; then SIGKILL whatever is left of every session it started."""
        code = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait()
        elif self.proc is not None:
            code = self.proc.returncode
        for group in self.groups:  # orphans of killed runs, e.g. timing worker processes
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        return code

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


class Service(Process):
    def __init__(self, db_url: str, workdir: Path, name: str = "service") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [str(BIN / "kernelwatch"), "serve", "--port", str(self.port)]
        super().__init__(command, clean_env(db_url, workdir), workdir / f"{name}.log")

    def start(self) -> Service:
        super().start()
        try:
            wait_until(
                "the service",
                lambda: httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200,
                timeout=60,
            )
        except TimeoutError as exc:
            raise RuntimeError(f"kernelwatch serve did not come up:\n{self.tail()}") from exc
        return self


def runner_token(env: dict[str, str], name: str) -> str:
    done = subprocess.run(
        [str(BIN / "kernelwatch"), "runner-token", "create", name],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def agent(url: str, token: str, workdir: Path, env: dict[str, str], name: str) -> Process:
    command = [
        str(BIN / "kernelwatch-runner"),
        "agent",
        "--cpu",  # the CPU fixture suite; a host without a GPU refuses without it
        "--server",
        url,
        "--token",
        token,
        "--spool",
        str(workdir / f"{name}-spool"),
        "--cache",
        str(workdir / f"{name}-cache"),
        "--poll",
        "0.2",
        "--lease-interval",
        "1",
    ]
    return Process(command, env, workdir / f"{name}.log")


def admin_client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)


def enqueue(url: str, shas: list[str], clone_url: str | None) -> list[int]:
    ids: list[int] = []
    with admin_client(url) as client:
        for i, sha in enumerate(shas):
            body = {"repository": REPOSITORY, "sha": sha, "branch": "main"}
            if clone_url:
                body["clone_url"] = clone_url
            answer = client.post("/api/v1/jobs", json=body)
            if answer.status_code != 201:
                raise RuntimeError(f"enqueue {i}: {answer.status_code} {answer.text}")
            ids.extend(answer.json()["job_ids"])
    return ids

"""Engine and session factory; SQLite is tuned for concurrent readers (WAL) and FK checks."""

from __future__ import annotations

import errno
import fcntl
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from service.core.settings import Settings


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets the dashboards read while a runner's result is being written.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def json_text(value: Any) -> str:
    """JSON columns' serializer: orjson writes a result document's JSON (ncu findings above all)
    several times faster than the json module, and reads it back (orjson.loads) as fast. Non-
    finite numbers never get this far: documents holding them are refused, and orjson would
    write them as null."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


@dataclass(frozen=True)
class Timeouts:
    """How long the service waits on its database before it answers 503 (seconds)."""

    connect: float = 5.0
    statement: float = 30.0
    pool: float = 10.0


def create_db_engine(url: str, timeouts: Timeouts | None = None) -> Engine:
    """An engine for `url`; with `timeouts` (the service's) a PostgreSQL server that is down or
    frozen is given up on in bounded time. Tools and benchmarks pass none: they wait."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            json_serializer=json_text,
            json_deserializer=orjson.loads,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # No JIT: it compiles a statement whose estimated cost passes jit_above_cost, which is what
    # missing or stale statistics make of a read of a few hundred rows (a commit's ncu captures,
    # estimated at millions of rows on a history never analysed: 45-115 ms with JIT, 2 without).
    # The service's statements are short; none reads the rows that would pay for a compile.
    options = ["-c jit=off"]
    bounded: dict[str, Any] = {}
    if timeouts is not None:
        # A server that is down, or frozen, must not hang a request: libpq gives up connecting
        # after connect_timeout (whole seconds), the server cancels a statement after
        # statement_timeout, and the pool stops waiting for a connection after pool_timeout.
        options.append(f"-c statement_timeout={max(1, round(timeouts.statement * 1000))}")
        bounded = {
            "pool_timeout": timeouts.pool,
            "connect_args": {"connect_timeout": max(1, math.ceil(timeouts.connect))},
        }
    bounded.setdefault("connect_args", {})["options"] = " ".join(options)
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=20,
        json_serializer=json_text,
        json_deserializer=orjson.loads,
        **bounded,
    )


HEALTH_SECONDS = 1.0  # /healthz answers within this, whatever the main pool is doing


def health_engine(settings: Settings) -> Engine:
    """An engine of its own for /healthz: one connection that no request can take, and timeouts
    well under HEALTH_SECONDS, so that a service whose pool is exhausted (every connection held
    by requests that wait on a lock) still says so at once."""
    url = settings.effective_database_url
    if make_url(url).get_backend_name() == "sqlite":
        return create_engine(url, connect_args={"check_same_thread": False, "timeout": 0.5})
    return create_engine(
        url,
        pool_size=1,
        max_overflow=0,
        pool_timeout=HEALTH_SECONDS / 2,
        pool_pre_ping=True,
        connect_args={"connect_timeout": 1, "options": "-c statement_timeout=500"},
    )


def engine_for(settings: Settings) -> Engine:
    """The engine of the service's database. A SQLite file that KERNELWATCH_DATABASE_URL names
    must be in a folder that exists (the default one, in KERNELWATCH_DATA_DIR, is made): a typo
    in a path would otherwise make folders, and a database nobody reads, where it points."""
    url = make_url(settings.effective_database_url)
    if settings.database_url and url.get_backend_name() == "sqlite" and url.database:
        folder = Path(url.database).parent
        if url.database != ":memory:" and not folder.is_dir():
            raise FileNotFoundError(
                errno.ENOENT,
                "the folder of the SQLite database KERNELWATCH_DATABASE_URL names does not "
                "exist (create it, or name another)",
                str(folder),
            )
    timeouts = Timeouts(
        connect=settings.database_connect_timeout_seconds,
        statement=settings.database_statement_timeout_seconds,
        pool=settings.database_pool_timeout_seconds,
    )
    return create_db_engine(settings.effective_database_url, timeouts)


def session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def one_writer(factory: sessionmaker[Session]) -> Iterator[None]:
    """On a SQLite file, one writing transaction at a time among this machine's processes.

    SQLite lets one transaction write while the others wait in its busy handler, which polls in
    growing sleeps (up to 100 ms) instead of waking when the lock is released: two server
    processes storing documents spent most of their time asleep there. Queued on an flock, the
    next writer starts the moment the last one commits. PostgreSQL needs nothing of the kind.
    """
    bind = factory.kw.get("bind")
    database = bind.url.database if isinstance(bind, Engine) else None
    if bind is None or bind.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    # A descriptor of its own per transaction: threads of one process queue on it as well.
    with open(f"{database}-writer.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def db_cause(exc: BaseException) -> str:
    """The driver's own first line of why (a host that does not resolve, a database that does
    not exist, a password refused), without SQLAlchemy's statement and links."""
    reason = str(getattr(exc, "orig", None) or exc).strip()
    return (reason.splitlines() or [type(exc).__name__])[0][:300]

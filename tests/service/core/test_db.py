"""The engines and sessions of service/core/db.py: a SQLite file made with its folder and tuned
(WAL, foreign keys, a busy timeout), JSON columns written by orjson, a PostgreSQL engine without
JIT whose connect, statement and pool waits are bounded when the service passes timeouts, the
separate one-connection engine of /healthz, the refusal of a configured SQLite file in a missing
folder, sessions that keep their objects readable after commit, the one-writer lock on a SQLite
file, and the first line of a driver's reason for an error."""

from __future__ import annotations

import errno
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, Engine, Integer, String, create_engine, event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from service.core.db import (
    HEALTH_SECONDS,
    Timeouts,
    create_db_engine,
    db_cause,
    engine_for,
    health_engine,
    json_text,
    one_writer,
    session_factory,
)
from service.core.settings import Settings

POSTGRES = "postgresql://kw:secret@127.0.0.1:1/kw"  # never connected to


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(String(50))
    facts: Mapped[Any] = mapped_column(JSON, default=dict)


class _Stop(Exception):
    """Raised where the driver would connect: the parameters are read, no server is needed."""


def connect_parameters(engine: Engine) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def grab(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        seen.update(params)
        raise _Stop

    event.listen(engine, "do_connect", grab)
    with pytest.raises(_Stop):
        engine.connect()
    return seen


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'deep' / 'er' / 'kw.db'}")
    yield engine
    engine.dispose()


def test_json_columns_write_compact_json_with_integer_keys_as_strings() -> None:
    assert json_text({"b": [1, 2.5], 3: None}) == '{"b":[1,2.5],"3":null}'


def test_a_sqlite_file_is_made_in_a_new_folder_and_tuned(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    with sqlite_engine.connect() as conn:
        pragmas = {
            p: conn.exec_driver_sql(f"PRAGMA {p}").scalar_one()
            for p in ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")
        }
    assert (tmp_path / "deep" / "er" / "kw.db").is_file()
    # WAL: the dashboards read while a result is written; synchronous 1 is NORMAL.
    assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "synchronous": 1,
                       "busy_timeout": 30000}  # fmt: skip


def test_a_json_column_round_trips_through_orjson_on_sqlite(sqlite_engine: Engine) -> None:
    Base.metadata.create_all(sqlite_engine)
    factory = session_factory(sqlite_engine)
    with factory() as session:
        session.add(Note(id=1, text="n", facts={"sm": 132, "clocks": [1980.0, None]}))
        session.commit()
    with sqlite_engine.connect() as conn:
        assert conn.execute(text("SELECT facts FROM notes")).scalar_one() == (
            '{"sm":132,"clocks":[1980.0,null]}'
        )
    with factory() as session:
        assert session.get(Note, 1).facts == {"sm": 132, "clocks": [1980.0, None]}


def test_objects_stay_readable_after_commit_and_close(sqlite_engine: Engine) -> None:
    Base.metadata.create_all(sqlite_engine)
    with session_factory(sqlite_engine)() as session:
        note = Note(id=1, text="kept", facts={})
        session.add(note)
        session.commit()
    # Expired on commit, a closed session's object would raise DetachedInstanceError here.
    assert note.text == "kept"


def test_postgresql_without_timeouts_waits_but_never_compiles_with_jit() -> None:
    engine = create_db_engine(POSTGRES)
    try:
        params = connect_parameters(engine)
        assert params["options"] == "-c jit=off"
        assert "connect_timeout" not in params
    finally:
        engine.dispose()


def test_the_services_timeouts_bound_connecting_statements_and_the_pool() -> None:
    engine = create_db_engine(POSTGRES, Timeouts(connect=2.5, statement=1.5, pool=4.0))
    try:
        params = connect_parameters(engine)
        # libpq takes whole seconds: 2.5 s is rounded up, never down to a shorter wait.
        assert params["connect_timeout"] == 3
        assert params["options"] == "-c jit=off -c statement_timeout=1500"
        assert engine.pool.timeout() == 4.0
    finally:
        engine.dispose()


def test_timeouts_below_the_units_are_one_not_zero_which_would_mean_none() -> None:
    engine = create_db_engine(POSTGRES, Timeouts(connect=0.1, statement=0.0001, pool=1.0))
    try:
        params = connect_parameters(engine)
        assert params["connect_timeout"] == 1
        assert params["options"].endswith("-c statement_timeout=1")
    finally:
        engine.dispose()


def test_the_health_engine_has_one_connection_no_request_can_take() -> None:
    engine = health_engine(Settings(database_url=POSTGRES))
    try:
        assert engine.pool.size() == 1
        assert engine.pool.timeout() == HEALTH_SECONDS / 2
        params = connect_parameters(engine)
        assert params["connect_timeout"] <= HEALTH_SECONDS
        assert params["options"] == "-c statement_timeout=500"
    finally:
        engine.dispose()


def test_a_configured_sqlite_file_in_a_missing_folder_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "kw.db"
    with pytest.raises(FileNotFoundError) as refused:
        engine_for(Settings(database_url=f"sqlite:///{missing}"))
    assert refused.value.errno == errno.ENOENT
    assert refused.value.filename == str(missing.parent)
    assert "KERNELWATCH_DATABASE_URL" in refused.value.strerror
    assert not missing.parent.exists()  # nothing made where the typo points


def test_the_default_sqlite_file_gets_its_data_folder(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh" / "data"
    engine = engine_for(Settings(data_dir=data_dir, database_url=None))
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        assert (data_dir / "kernelwatch.db").is_file()
    finally:
        engine.dispose()


def test_a_writer_holds_the_files_lock_until_it_is_done(sqlite_engine: Engine) -> None:
    factory = session_factory(sqlite_engine)
    lock_path = f"{sqlite_engine.url.database}-writer.lock"

    def try_lock() -> bool:
        # A descriptor of its own, as another transaction (thread or process) would open.
        with open(lock_path, "a") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(other, fcntl.LOCK_UN)
            return True

    with one_writer(factory):
        assert not try_lock()
    assert try_lock()


def test_no_writer_lock_where_sqlite_has_no_file_or_the_database_is_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Locks are named after the database: ":memory:" and PostgreSQL's "kw" would land here.
    monkeypatch.chdir(tmp_path)
    memory = create_db_engine("sqlite:///:memory:")
    postgres = create_db_engine(POSTGRES)
    try:
        for factory in (session_factory(memory), session_factory(postgres), sessionmaker()):
            with one_writer(factory):
                pass
        assert list(tmp_path.iterdir()) == []
    finally:
        memory.dispose()
        postgres.dispose()


def test_db_cause_is_the_drivers_first_line_without_sqlalchemys_links(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.db'}")
    try:
        with pytest.raises(OperationalError) as failed:
            engine.connect()
    finally:
        engine.dispose()
    assert "sqlalche.me" in str(failed.value)
    assert db_cause(failed.value) == "unable to open database file"


def test_db_cause_of_an_error_without_words_is_its_kind_and_long_words_are_cut() -> None:
    assert db_cause(TimeoutError()) == "TimeoutError"
    assert db_cause(RuntimeError("x" * 500 + "\nsecond line")) == "x" * 300
    assert db_cause(RuntimeError("  \n  host db does not resolve\n")) == (
        "host db does not resolve"
    )

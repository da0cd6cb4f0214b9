"""`kernelwatch`: serve the API and manage its database."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import sys
import tempfile

from pydantic import ValidationError
from pydantic_settings import SettingsError
from sqlalchemy.exc import OperationalError

from service import cli_admin, cli_commit, cli_import
from service.core.db import db_cause
from service.core.logging import configure_logging
from service.core.settings import Settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from service.api.app import create_app
    from service.core.telemetry import MULTIPROC_ENV
    from service.web import connections

    _check_schema(settings)
    # The protocol reads them in every worker process: Settings validated them here.
    os.environ[connections.IDLE_ENV] = str(settings.idle_timeout_seconds)
    os.environ[connections.HEADER_ENV] = str(settings.header_timeout_seconds)
    os.environ[connections.BODY_RATE_ENV] = str(settings.body_min_bytes_per_second)
    os.environ[connections.BODY_DEADLINE_ENV] = str(settings.body_deadline_seconds)
    os.environ[connections.MAX_BODY_ENV] = str(settings.max_body_bytes)
    level = settings.log_level.lower()
    if args.workers > 1:
        if settings.is_sqlite:
            _db_upgrade(args, settings)  # once, before the workers start and race for it
        # Each worker process builds its own app (and engine) from the same environment.
        config = uvicorn.Config(
            "service.api.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=level,
            http=connections.PROTOCOL,
        )
        sock = config.bind_socket()
        # asyncio sets TCP_NODELAY only on connections accepted from a socket it made itself
        # (proto IPPROTO_TCP); the workers share this one, and without it every response on a
        # kept-alive connection waits ~40 ms for the client's delayed ACK. Linux hands the
        # option down to the accepted connections.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The workers' Prometheus counters meet in one folder, so that /metrics on any of them
        # sums all (service.core.telemetry); a fresh one per server unless the operator set it.
        made = None
        if not os.environ.get(MULTIPROC_ENV):
            made = tempfile.mkdtemp(prefix="kernelwatch-prometheus-")
            os.environ[MULTIPROC_ENV] = made
        try:
            Multiprocess(config, sockets=[sock]).run()
        finally:
            if made:
                shutil.rmtree(made, ignore_errors=True)
        return 0
    app = create_app(settings)
    uvicorn.run(app, host=args.host, port=args.port, log_level=level, http=connections.PROTOCOL)
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from service.demo import DemoError, demo_settings, load_demo

    demo = demo_settings(settings)
    print(f"loading the demo history into {demo.effective_database_url}")
    try:
        count = load_demo(settings)
    except DemoError as exc:
        raise cli_admin.CliError(str(exc)) from exc
    print(f"{count} documents loaded; open http://{args.host}:{args.port}/")
    args.workers = 1
    return _serve(args, demo)


def _check_schema(settings: Settings) -> None:
    """Refuse to serve a database whose schema this kernelwatch cannot use, saying what to run:
    behind (PostgreSQL: `db upgrade`; SQLite migrates itself on start), empty, or ahead."""
    from service.core.db import engine_for
    from service.core.migrate import head_revision, known_revisions, schema_problem
    from service.store.reads.queries import ping_engine

    engine = engine_for(settings)
    try:
        _, current = ping_engine(engine)
    except OperationalError as exc:
        # A service that started on a database it cannot reach logged tracebacks from its
        # loops every few seconds; a supervisor restarts one that exits, and the log says why.
        where = engine.url.render_as_string(hide_password=True)
        raise cli_admin.CliError(
            f"the database at {where} does not answer ({db_cause(exc)}): check "
            "KERNELWATCH_DATABASE_URL and that the server runs; not serving"
        ) from None
    finally:
        engine.dispose()
    if settings.is_sqlite and (current is None or current in known_revisions()):
        return  # create_app brings it to the head
    if problem := schema_problem(current, head_revision()):
        raise cli_admin.CliError(problem)


def _db_upgrade(_args: argparse.Namespace, settings: Settings) -> int:
    from service.core.db import engine_for
    from service.core.migrate import upgrade

    engine = engine_for(settings)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    print(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")
    return 0


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is no TCP port: give 1 to 65535")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelwatch", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the API and pages")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8000)
    serve.add_argument("--workers", type=_positive, default=1, help="server processes (default 1)")
    serve.set_defaults(func=_serve)
    demo = sub.add_parser(
        "demo", help="load a history recorded on an H200 into a demo database and serve it"
    )
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=_port, default=8000)
    demo.set_defaults(func=_demo)
    db = sub.add_parser("db", help="database schema")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply every migration").set_defaults(func=_db_upgrade)
    cli_admin.add_parsers(sub)
    cli_import.add_parser(sub)
    cli_commit.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except SettingsError as exc:
        # A list setting that is not JSON (pydantic-settings parses it before any validator).
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"KERNELWATCH_{field.group(1).upper()}" if field else "a KERNELWATCH_ setting"
        given = os.environ.get(name, "")[:80]
        print(f"kernelwatch: {name}: {given!r} is not JSON (a list is written as JSON: "
              '["main", "release"], [{"name": ..., "url": ...}])', file=sys.stderr)  # fmt: skip
        return 2
    except ValidationError as exc:
        wrong = "; ".join(
            f"KERNELWATCH_{str(e['loc'][0]).upper()}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        print(f"kernelwatch: {wrong}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    try:
        return args.func(args, settings)
    except cli_admin.CliError as exc:
        print(f"kernelwatch: {exc}", file=sys.stderr)
        return 1
    except OperationalError as exc:
        print(f"kernelwatch: the database does not answer ({db_cause(exc)}): check "
              "KERNELWATCH_DATABASE_URL and that the server runs", file=sys.stderr)  # fmt: skip
        return 1
    except BrokenPipeError:
        # Its reader stopped reading (`| head`): nothing to say, and Python's own flush of
        # stdout at exit must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = exc.filename or settings.data_dir
        why = str(exc.strerror or exc)
        hint = (
            ""
            if "KERNELWATCH_" in why
            else (" (KERNELWATCH_DATA_DIR must be a folder this user can create and write)")
        )
        print(f"kernelwatch: {why}: {where}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

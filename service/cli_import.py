"""`kernelwatch import`: another tool's results as a run of a commit, straight into the
database the service uses (service.runs.importing), then judged."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from service.cli_admin import CliError, usable_engine, validated
from service.core.db import session_factory
from service.core.errors import DomainError
from service.core.settings import Settings
from service.runs import importing
from service.runs.imports import ImportFileError
from service.runs.imports.formats import FORMATS
from service.schemas.imports import ImportCreate

MAX_FILE_BYTES = 256 << 20


def sample_files(path: Path, data: bytes) -> dict[str, bytes]:
    """nvbench's binary sample files that the JSON names (--jsonbin), read from beside it."""
    names: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if value.get("name") == "filename" and isinstance(value.get("value"), str):
                names.add(value["value"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    try:
        walk(json.loads(data))
    except (ValueError, RecursionError):
        return {}  # the reader says what is wrong with the file
    found = {}
    for name in names:
        for candidate in (Path(name), path.parent / name, path.parent / Path(name).name):
            if candidate.is_file():
                found[name] = candidate.read_bytes()
                break
    return found


def import_results(args: argparse.Namespace, settings: Settings) -> int:
    target = validated(ImportCreate, format=args.format, repository=args.repo,
                       commit=args.commit, branch=args.branch,
                       committed_at=args.committed_at)  # fmt: skip
    path = Path(args.file)
    if path.is_dir():
        raise CliError(f"{path} is a directory: name the results file in it")
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CliError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")
    data = path.read_bytes()
    samples = sample_files(path, data) if FORMATS[target.format].sample_files else None
    try:  # the whole file is read and checked before the database is touched
        doc, raw = importing.document(target, data, samples)
    except ImportFileError as exc:
        raise CliError(f"{path}: cannot import as {target.format}: {exc}") from None
    engine = usable_engine(settings)
    try:
        outcome = importing.store(session_factory(engine), doc, raw)
    except DomainError as exc:
        raise CliError(f"{path}: {exc.detail}") from None
    finally:
        engine.dispose()
    if outcome.stored:
        print(f"imported {outcome.results} results of {path.name} as run {outcome.run_id} "
              f"({target.repository}@{target.branch} {target.commit[:12]})")  # fmt: skip
    else:
        print(f"{path.name} was imported already as run {outcome.run_id}; nothing changed")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmd = sub.add_parser("import", help="import another benchmark tool's results as a run")
    formats = "; ".join(f"{name}: {f.title}" for name, f in FORMATS.items())
    cmd.add_argument("--format", required=True, help=formats)
    cmd.add_argument("--repo", required=True, help="owner/name")
    cmd.add_argument("--commit", required=True, help="the 40-hex SHA the results belong to")
    cmd.add_argument("--branch", default="main")
    cmd.add_argument("--committed-at", help="ISO 8601 time of the commit (default: the file's)")
    cmd.add_argument("file", help="the tool's JSON output")
    cmd.set_defaults(func=import_results)

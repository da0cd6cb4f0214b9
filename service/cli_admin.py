"""`kernelwatch` subcommands that change the database directly: tokens, jobs, repositories."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from service.core import clone_urls
from service.core.db import engine_for, session_factory
from service.core.errors import Conflict, NotFound
from service.core.migrate import head_revision, schema_problem, upgrade
from service.core.settings import Settings
from service.core.tokens import new_token, token_hash
from service.models import Repository
from service.models.base import utcnow
from service.schemas.document import Name
from service.schemas.jobs import JobCreate, check_labels
from service.store.jobs import queue, runners
from service.store.reads import queries
from service.store.reads.queries import ping_engine
from service.store.upsert import get_or_create

_LABEL = re.compile(r"^[\w.-]{1,100}=[^,]{0,200}$")


class CliError(Exception):
    """A problem the user can fix; printed without a traceback."""


# The API's field names as the command line spells them.
FLAGS = {"repository": "--repo", "sha": "--sha", "branch": "--branch", "commit": "--commit",
         "clone_url": "--clone-url", "labels": "--labels", "format": "--format",
         "committed_at": "--committed-at"}  # fmt: skip
RUNNER_NAME = TypeAdapter(Name)  # a runner's name, as a result document may give it


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], **fields: object) -> M:
    """The arguments checked by the API's own model: one line naming each bad flag."""
    try:
        return model(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        bad = "; ".join(
            f"{FLAGS.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else 'arguments'}: {e['msg']}"
            for e in exc.errors()
        )
        raise CliError(f"invalid arguments: {bad}") from None


def runner_name(name: str) -> str:
    try:
        return RUNNER_NAME.validate_python(name)
    except ValidationError as exc:
        raise CliError(f"invalid runner name {name!r}: {exc.errors()[0]['msg']}") from None


def parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",") if text.strip()):
        if not item:
            raise CliError(f"labels {text!r}: an empty label between commas; write k=v,k=v")
        if not _LABEL.match(item):
            raise CliError(f"label {item!r} is not key=value")
        key, value = item.split("=", 1)
        labels[key] = value
    try:
        return check_labels(labels)
    except ValueError as exc:
        raise CliError(f"labels {text!r}: {exc}") from None


def usable_engine(settings: Settings) -> Engine:
    """The database's engine, its schema at this kernelwatch's head: the embedded SQLite
    migrates itself, quietly, as `serve` does; PostgreSQL is migrated by `kernelwatch db
    upgrade`, and a schema behind (or none) says so in one line (CliError), not with the
    first query's UndefinedTable."""
    engine = engine_for(settings)
    try:
        if settings.is_sqlite:
            upgrade(engine, quiet=True)
        else:
            _, current = ping_engine(engine)
            if problem := schema_problem(current, head_revision()):
                raise CliError(problem)
    except BaseException:
        engine.dispose()
        raise
    return engine


@contextmanager
def _session(settings: Settings) -> Iterator[Session]:
    engine = usable_engine(settings)
    try:
        with session_factory(engine)() as session, session.begin():
            yield session
    finally:
        engine.dispose()


def runner_token_create(args: argparse.Namespace, settings: Settings) -> int:
    name = runner_name(args.name)  # as a result document gives it: blanks around it dropped
    labels = parse_labels(args.labels or "")
    token = new_token("kwr")
    with _session(settings) as session:
        try:
            runners.issue_token(session, name, labels, token_hash(token), args.rotate)
        except Conflict as exc:
            raise CliError(exc.detail) from None
    print(token)
    print(
        f"runner {name!r} (labels: {labels or 'none'}): this token is shown once; "
        "give it to `kernelwatch-runner agent --token`",
        file=sys.stderr,
    )
    return 0


def runner_token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    name = runner_name(args.name)
    with _session(settings) as session:
        try:
            runners.revoke_token(session, name)
        except NotFound as exc:
            raise CliError(exc.detail) from None
    print(f"revoked the token of runner {name!r}")
    return 0


def _check_clone_url(url: str | None, settings: Settings) -> None:
    if why := clone_urls.refusal(url, settings):
        raise CliError(f"--clone-url: {why}")


def enqueue(args: argparse.Namespace, settings: Settings) -> int:
    labels = parse_labels(args.labels) if args.labels else None
    job = validated(JobCreate, repository=args.repo, sha=args.sha, branch=args.branch,
                    clone_url=args.clone_url, labels=labels)  # fmt: skip
    _check_clone_url(args.clone_url, settings)
    with _session(settings) as session:
        repo = queries.repository_or_none(session, args.repo)
        if repo is None and not args.clone_url:
            raise CliError(f"no repository {args.repo!r}; pass --clone-url to register it")
        if repo is None:
            repo = get_or_create(
                session,
                Repository,
                {"name": args.repo},
                clone_url=args.clone_url,
                runner_label_sets=[{}],
                created_at=utcnow(),
            )
        label_sets = [job.labels] if job.labels is not None else repo.runner_label_sets
        jobs = queue.enqueue(
            session,
            repository_id=repo.id,
            sha=job.sha.lower(),
            branch=job.branch,
            label_sets=label_sets,
            max_attempts=settings.max_attempts,
            summary="queued by hand",
        )
        ids = [j.id for j in jobs]
    print(f"queued job(s) {', '.join(map(str, ids))} for {args.repo}@{args.branch} {args.sha[:12]}")
    return 0


def repo_runner_labels(args: argparse.Namespace, settings: Settings) -> int:
    label_sets = [parse_labels(text) for text in args.label_sets] or [{}]
    validated(JobCreate, repository=args.name, sha="0" * 40, clone_url=args.clone_url)
    _check_clone_url(args.clone_url, settings)
    with _session(settings) as session:
        if queries.repository_or_none(session, args.name) is None and not args.clone_url:
            # A typo of a name would register a repository no push ever reaches.
            raise CliError(f"no repository {args.name!r}; pass --clone-url to register it")
        runners.label_sets(session, args.name, args.clone_url, label_sets)
    print(f"{args.name}: each pushed commit queues {len(label_sets)} job(s): {label_sets}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    tokens = sub.add_parser("runner-token", help="create or revoke a runner's token")
    tok = tokens.add_subparsers(dest="token_command", required=True)
    create = tok.add_parser("create", help="print a new token for runner NAME (shown once)")
    create.add_argument("name")
    create.add_argument("--labels", default="", help="e.g. gpu=h100,arch=sm_90")
    create.add_argument("--rotate", action="store_true", help="replace an existing token")
    create.set_defaults(func=runner_token_create)
    revoke = tok.add_parser("revoke", help="refuse runner NAME's token from now on")
    revoke.add_argument("name")
    revoke.set_defaults(func=runner_token_revoke)

    enq = sub.add_parser("enqueue", help="queue a run of one commit")
    enq.add_argument("--repo", required=True, help="owner/name")
    enq.add_argument("--sha", required=True)
    enq.add_argument("--branch", default="main")
    enq.add_argument("--labels", default="", help="required runner labels, k=v,k=v")
    enq.add_argument("--clone-url", help="registers the repository if it is new")
    enq.set_defaults(func=enqueue)

    repo = sub.add_parser("repo", help="repository settings")
    repo_sub = repo.add_subparsers(dest="repo_command", required=True)
    labels = repo_sub.add_parser(
        "runner-labels", help="label sets: one job per set per pushed commit (none: any runner)"
    )
    labels.add_argument("name")
    labels.add_argument("label_sets", nargs="*", metavar="k=v,k=v")
    labels.add_argument("--clone-url")
    labels.set_defaults(func=repo_runner_labels)

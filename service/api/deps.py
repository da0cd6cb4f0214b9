"""Typed dependencies shared by the routes: settings, sessions and who is calling."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from service.core.settings import Settings
from service.core.tokens import same_secret, token_hash
from service.models import Runner
from service.store.reads import queries

# The plain ones live beside settings (service.pages uses them too); the routes take them here.
from service.web.deps import MAX_ID as MAX_ID
from service.web.deps import SHA_PATTERN as SHA_PATTERN
from service.web.deps import RowId as RowId
from service.web.deps import SessionDep as SessionDep
from service.web.deps import SessionFactoryDep as SessionFactoryDep
from service.web.deps import SettingsDep as SettingsDep
from service.web.deps import ShaPath as ShaPath
from service.web.errors import HttpError

_bearer = HTTPBearer(auto_error=False, description="admin token or runner token")
CredentialsDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


@dataclass(frozen=True)
class Caller:
    """Who sent the request: the admin, or a runner (by its token)."""

    admin: bool
    runner_id: int | None = None


def _bearer_token(credentials: HTTPAuthorizationCredentials | None) -> str:
    if credentials is None:
        raise HttpError(
            401,
            "missing 'Authorization: Bearer <token>' header",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return credentials.credentials


def _is_admin(settings: Settings, token: str) -> bool:
    return bool(settings.admin_token) and same_secret(token, settings.admin_token or "")


def _runner_for(session: Session, token: str) -> Runner | None:
    # Looked up by the SHA-256 of a high-entropy token: the index lookup leaks nothing useful,
    # and the final comparison is constant-time anyway.
    digest = token_hash(token)
    runner = queries.runner_by_token_hash(session, digest)
    if runner is None or not same_secret(digest, runner.token_hash or ""):
        return None
    if runner.revoked_at is not None:
        raise HttpError(401, f"the token of runner {runner.name!r} was revoked")
    return runner


def require_admin(settings: SettingsDep, credentials: CredentialsDep) -> Caller:
    token = _bearer_token(credentials)
    if not settings.admin_token:
        raise HttpError(401, "this server has no admin token; set KERNELWATCH_ADMIN_TOKEN")
    if not _is_admin(settings, token):
        raise HttpError(401, "the bearer token is not valid")
    return Caller(admin=True)


def require_runner(session: SessionDep, credentials: CredentialsDep) -> Runner:
    runner = _runner_for(session, _bearer_token(credentials))
    if runner is None:
        raise HttpError(
            401, "not a valid runner token; create one with `kernelwatch runner-token create NAME`"
        )
    return runner


async def require_admin_or_runner(
    settings: SettingsDep, factory: SessionFactoryDep, credentials: CredentialsDep
) -> Caller:
    token = _bearer_token(credentials)
    if _is_admin(settings, token):
        return Caller(admin=True)
    runner_id = await run_in_threadpool(_runner_id_for, factory, token)
    if runner_id is None:
        raise HttpError(401, "the bearer token is neither the admin token nor a runner token")
    return Caller(admin=False, runner_id=runner_id)


def _runner_id_for(factory: sessionmaker[Session], token: str) -> int | None:
    with factory() as session:
        runner = _runner_for(session, token)
        return runner.id if runner is not None else None


AdminDep = Annotated[Caller, Depends(require_admin)]
RunnerDep = Annotated[Runner, Depends(require_runner)]
CallerDep = Annotated[Caller, Depends(require_admin_or_runner)]

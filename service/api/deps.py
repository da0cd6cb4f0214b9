"""Typed dependencies shared by the routes."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from service.core.errors import ApiError
from service.core.settings import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session_factory(request: Request) -> sessionmaker[Session]:
    return request.app.state.session_factory


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.session_factory() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionFactoryDep = Annotated[sessionmaker[Session], Depends(get_session_factory)]
SessionDep = Annotated[Session, Depends(get_session)]

_bearer = HTTPBearer(auto_error=False, description="KERNELWATCH_ADMIN_TOKEN")


def require_admin(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    if credentials is None:
        raise ApiError(
            401,
            "missing 'Authorization: Bearer <token>' header",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not settings.admin_token:
        raise ApiError(401, "this server has no admin token; set KERNELWATCH_ADMIN_TOKEN")
    # Constant-time: the comparison must not leak how much of a guessed token was right.
    if not hmac.compare_digest(credentials.credentials.encode(), settings.admin_token.encode()):
        raise ApiError(401, "the bearer token is not valid")


AdminDep = Annotated[None, Depends(require_admin)]

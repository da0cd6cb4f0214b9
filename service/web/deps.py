"""The plain dependencies of routes and pages alike: settings, database sessions, row ids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy.orm import Session, sessionmaker

from service.core.settings import Settings


# Plain lookups are async: FastAPI runs a sync dependency in the thread pool, a hop that costs
# more than the lookup.
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_session_factory(request: Request) -> sessionmaker[Session]:
    return request.app.state.session_factory


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.session_factory() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
# Row ids are 32-bit integers on PostgreSQL: a larger one names nothing and must not reach SQL.
MAX_ID = 2**31 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ID)]
# A commit in a URL: its full sha or a unique prefix of it.
SHA_PATTERN = r"^[0-9A-Fa-f]{4,40}$"
ShaPath = Annotated[
    str, Path(pattern=SHA_PATTERN, description="a commit's sha, or 4 or more of its first digits")
]
SessionFactoryDep = Annotated[sessionmaker[Session], Depends(get_session_factory)]
SessionDep = Annotated[Session, Depends(get_session)]

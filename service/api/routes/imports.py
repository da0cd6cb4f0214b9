"""Results of other benchmark tools (Google Benchmark, nvbench) imported as runs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from service.api.body import read_body
from service.api.deps import AdminDep, SessionFactoryDep, SettingsDep
from service.api.errors import validation_response
from service.core.errors import InvalidDocument, Unprocessable
from service.runs import importing
from service.runs.imports import ImportFileError
from service.schemas.imports import ImportCreate, ImportFormat
from service.schemas.names import BRANCH_SCHEMA
from service.schemas.runs import RunStored

router = APIRouter(prefix="/api/v1/imports", tags=["imports"])


@router.post(
    "/{format}",
    status_code=201,
    response_model=RunStored,
    responses={200: {"model": RunStored, "description": "The same file was imported already"}},
)
async def import_results(
    format: ImportFormat,
    request: Request,
    _admin: AdminDep,
    settings: SettingsDep,
    factory: SessionFactoryDep,
    repo: Annotated[str, Query(description="OWNER/NAME of the repository")],
    commit: Annotated[
        str,
        Query(
            description="the 40-hex SHA the results were measured at",
            json_schema_extra={"pattern": "^[0-9a-fA-F]{40}$", "minLength": 40, "maxLength": 40},
        ),
    ],
    branch: Annotated[str, Query(json_schema_extra=BRANCH_SCHEMA)] = "main",
    committed_at: Annotated[datetime | None, Query()] = None,
) -> JSONResponse:
    """Import one nvbench or Google Benchmark JSON file (the body) as a run of a commit."""
    try:
        target = ImportCreate(format=format, repository=repo, commit=commit, branch=branch,
                              committed_at=committed_at)  # fmt: skip
    except ValidationError as exc:
        return validation_response(list(exc.errors()), "import")
    body = await read_body(request, settings.max_body_bytes)
    try:
        outcome = await run_in_threadpool(
            importing.import_file, factory, target, body, None, settings.analyse_in_request
        )
    except ImportFileError as exc:
        raise Unprocessable(f"cannot import this {format} file: {exc}") from exc
    except InvalidDocument as exc:
        raise exc.within(f"cannot import this {format} file") from None
    if outcome.stored:
        request.app.state.analysis.run_stored()
    detail = (
        f"imported {outcome.results} results as run {outcome.run_id}"
        if outcome.stored
        else f"this file was imported already as run {outcome.run_id}; nothing changed"
    )
    stored = RunStored(run_id=outcome.run_id, stored=outcome.stored, results=outcome.results,
                       detail=outcome.detail or detail)  # fmt: skip
    return JSONResponse(status_code=201 if outcome.stored else 200, content=stored.model_dump())

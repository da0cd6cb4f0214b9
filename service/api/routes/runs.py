"""Result documents from runners."""

from __future__ import annotations

import time

from fastapi import APIRouter, BackgroundTasks, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from service.api.body import parse_document, read_body, require_json
from service.api.deps import (
    SHA_PATTERN,
    CallerDep,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
)
from service.api.errors import validation_response
from service.core import telemetry
from service.core.errors import InvalidDocument, NotFound
from service.runs import judged
from service.runs.arrival import receive
from service.schemas.runs import RunListed, RunPublic, RunStored
from service.store.reads import listings, queries
from service.store.reads.queries import repository_named

router = APIRouter(prefix="/api/v1/runs", tags=["runs"])

_DOCUMENT_BODY = {
    "requestBody": {
        "required": True,
        # The schema itself is added to the components by service.api.app.
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunDocument"}}},
    }
}


@router.post(
    "",
    status_code=201,
    response_model=RunStored,
    openapi_extra=_DOCUMENT_BODY,
    responses={200: {"model": RunStored, "description": "Already stored; nothing changed"}},
)
async def post_run(
    request: Request,
    caller: CallerDep,
    settings: SettingsDep,
    factory: SessionFactoryDep,
    background: BackgroundTasks,
) -> JSONResponse:
    """Store a result document (idempotent per run id); a runner needs the job's lease."""
    started = time.perf_counter()
    require_json(request, "the result document")
    body = await read_body(request, settings.max_body_bytes)
    # Off the event loop: a document of tens of megabytes holds no other request while parsed.
    raw, digest = await run_in_threadpool(parse_document, body)
    runner_id = None
    if not caller.admin:
        assert caller.runner_id is not None
        runner_id = caller.runner_id
    try:
        arrival = await receive(factory, settings, raw, digest, runner_id)
    except ValidationError as exc:
        return validation_response(list(exc.errors()), "document")
    except InvalidDocument as exc:
        raise exc.within("invalid document") from None
    outcome = arrival.outcome
    body = RunStored(
        run_id=outcome.run_id,
        stored=outcome.stored,
        results=outcome.results,
        detail=outcome.detail
        or (
            f"stored run {outcome.run_id} with {outcome.results} results"
            if outcome.stored
            else f"run {outcome.run_id} was already stored; nothing changed"
        ),
    )
    telemetry.RUNS_INGESTED.labels("stored" if outcome.stored else "duplicate").inc()
    telemetry.INGEST_SECONDS.observe(time.perf_counter() - started)
    if judged.wanted(settings):
        # After the answer: the runner never waits on GitHub, nor fails because of it.
        for run_uuid in arrival.judged:
            background.add_task(judged.report, factory, settings, run_uuid)
    if (outcome.stored and outcome.pk is not None) or outcome.reopened:
        # Change points (and, by default, the verdicts, which report to GitHub) follow shortly.
        request.app.state.analysis.run_stored()
    return JSONResponse(status_code=201 if outcome.stored else 200, content=body.model_dump())


@router.get("", response_model=list[RunListed])
def list_runs(
    session: SessionDep,
    repository: str | None = None,
    branch: str | None = Query(None, description="only runs on this branch"),
    commit: str | None = Query(
        None, description="full sha or a prefix of at least 4", pattern=SHA_PATTERN
    ),
    suite: str | None = None,
    limit: int = Query(100, ge=1, le=1000),
) -> list[RunListed]:
    """Stored runs, newest received first, filtered by repository, branch, commit and suite."""
    repository_id = repository_named(session, repository).id if repository else None
    prefix = commit.lower() if commit else None
    rows = listings.newest_runs(session, limit, repository_id, branch, prefix, suite)
    return [RunListed.from_run(run, sha=sha, repository=name) for run, sha, name in rows]


@router.get("/{run_id}", response_model=RunPublic)
def get_run(run_id: str, session: SessionDep) -> RunPublic:
    """One stored run: commit, environment, build status and result count."""
    found = queries.run_named(session, run_id)
    if found is None:
        raise NotFound(f"no run with id {run_id!r}")
    run, sha, repository = found
    results = queries.result_count(session, run.id)
    return RunPublic.from_run(run, sha=sha, repository=repository, results=results)

"""Result documents from runners."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from service.api.body import read_json_body
from service.api.deps import Caller, CallerDep, SessionDep, SessionFactoryDep, SettingsDep
from service.api.errors import validation_response
from service.core.errors import ApiError
from service.models import Commit, Repository, Result, Run, Runner
from service.schemas.document import RunDocument, RunnerIn, find_non_finite
from service.schemas.runs import RunPublic, RunStored
from service.store.ingest import DocumentConflict, SummaryMismatch, ingest
from service.store.jobs import current_attempt, finish

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
    request: Request, caller: CallerDep, settings: SettingsDep, factory: SessionFactoryDep
) -> JSONResponse:
    """Store a result document (idempotent per run id); a runner needs the job's lease."""
    raw = await read_json_body(request, settings.max_body_bytes)
    bad = find_non_finite(raw)
    if bad:
        raise ApiError(422, f"invalid document: {bad}: NaN and infinities are not measurements")
    try:
        doc = RunDocument.model_validate(raw)
    except ValidationError as exc:
        return validation_response(list(exc.errors()), "document")
    try:
        within = None if caller.admin else _lease_check(doc, caller)
        outcome = await run_in_threadpool(ingest, factory, doc, raw, within)
    except DocumentConflict as exc:
        raise ApiError(409, str(exc)) from exc
    except SummaryMismatch as exc:
        raise ApiError(422, f"invalid document: {exc}") from exc
    body = RunStored(
        run_id=outcome.run_id,
        stored=outcome.stored,
        results=outcome.results,
        detail=(
            f"stored run {outcome.run_id} with {outcome.results} results"
            if outcome.stored
            else f"run {outcome.run_id} was already stored; nothing changed"
        ),
    )
    return JSONResponse(status_code=201 if outcome.stored else 200, content=body.model_dump())


def _lease_check(
    doc: RunDocument, caller: Caller
) -> Callable[[Session], Callable[[Session], None]]:
    """A runner's results count only under the job's current attempt token."""

    def within(session: Session) -> Callable[[Session], None]:
        if doc.job_id is None or not doc.lease_token:
            raise ApiError(409, "a runner's document needs job_id and lease_token of its claim")
        runner = session.get(Runner, caller.runner_id)
        assert runner is not None
        if doc.runner is not None and doc.runner.name != runner.name:
            raise ApiError(
                409,
                f"the document names runner {doc.runner.name!r}, "
                f"but the token belongs to {runner.name!r}",
            )
        if doc.runner is None:
            # The token says which runner this is; the document need not repeat it.
            doc.runner = RunnerIn(name=runner.name, host=runner.host, labels=runner.labels)
        job = current_attempt(session, doc.job_id, doc.lease_token, runner)
        if job.commit_sha != doc.commit.sha:
            raise ApiError(
                409, f"job {job.id} is for commit {job.commit_sha}, not {doc.commit.sha}"
            )
        return lambda s: finish(s, job, succeeded=True)

    return within


@router.get("/{run_id}", response_model=RunPublic)
def get_run(run_id: str, session: SessionDep) -> RunPublic:
    """One stored run: commit, environment, build status and result count."""
    row = session.execute(
        select(Run, Commit.sha, Repository.name)
        .join(Commit, Commit.id == Run.commit_id)
        .join(Repository, Repository.id == Run.repository_id)
        .where(Run.run_uuid == run_id)
    ).one_or_none()
    if row is None:
        raise ApiError(404, f"no run with id {run_id!r}")
    run, sha, repository = row
    results = len(session.scalars(select(Result.id).where(Result.run_id == run.id)).all())
    return RunPublic.from_run(run, sha=sha, repository=repository, results=results)

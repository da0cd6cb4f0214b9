"""GitHub's push webhook."""

from __future__ import annotations

import hashlib
import hmac
import json

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from service.api.body import check_depth, read_body, too_deep
from service.api.deps import SessionFactoryDep, SettingsDep
from service.api.errors import validation_response
from service.core.errors import ApiError
from service.core.tokens import same_secret
from service.schemas.text import may_hold_unstorable, unstorable_text
from service.store.webhooks import record, seen_delivery

router = APIRouter(tags=["webhooks"])


def _verify_signature(secret: str, body: bytes, header: str | None) -> None:
    if not header:
        raise ApiError(401, "missing X-Hub-Signature-256: set the webhook's secret on GitHub")
    algorithm, _, signature = header.partition("=")
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    # Constant time, so the response time says nothing about the signature.
    if algorithm != "sha256" or not same_secret(signature, expected):
        raise ApiError(
            401,
            "X-Hub-Signature-256 does not match the body: "
            "is KERNELWATCH_WEBHOOK_SECRET the secret set on GitHub?",
        )


@router.post("/webhooks/github", status_code=202)
async def github_webhook(
    request: Request,
    settings: SettingsDep,
    factory: SessionFactoryDep,
    x_github_event: str | None = Header(None, max_length=50),
    x_github_delivery: str | None = Header(None, max_length=100),
    x_hub_signature_256: str | None = Header(None),
) -> JSONResponse:
    """Receive ping and push events; a push queues jobs for its head commit."""
    if not settings.webhook_secret:
        raise ApiError(
            503,
            "webhooks are off: set KERNELWATCH_WEBHOOK_SECRET to the secret "
            "configured on GitHub and restart the service",
        )
    body = await read_body(request, settings.webhook_max_bytes)
    _verify_signature(settings.webhook_secret, body, x_hub_signature_256)
    if not x_github_event:
        raise ApiError(400, "missing X-GitHub-Event header")
    if not x_github_delivery:
        raise ApiError(400, "missing X-GitHub-Delivery header")
    previous = await run_in_threadpool(seen_delivery, factory, x_github_delivery)
    if previous is None:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"the signed body is not JSON: {exc}") from exc
        except RecursionError:
            raise too_deep(f"the {x_github_event} payload") from None
        check_depth(payload, f"the {x_github_event} payload")
        unstorable = unstorable_text(payload) if may_hold_unstorable(body) else None
        if unstorable:
            raise ApiError(422, f"invalid {x_github_event} payload: {unstorable} cannot be stored")
        try:
            previous = await run_in_threadpool(
                record, factory, settings, x_github_delivery, x_github_event, payload
            )
        except ValidationError as exc:
            return validation_response(list(exc.errors()), f"{x_github_event} payload")
    return JSONResponse(
        status_code=previous.status,
        content={
            "detail": previous.detail,
            "job_ids": previous.job_ids,
            "redelivery": previous.redelivery,
        },
    )

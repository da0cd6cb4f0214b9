"""GitHub's push webhook."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import tempfile

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from service.api.body import check_depth, raw_body, too_deep
from service.api.deps import SessionFactoryDep, SettingsDep
from service.api.errors import validation_response
from service.core.errors import InvalidReference, Unprocessable
from service.core.tokens import same_secret
from service.integrations.github.events import receive
from service.schemas.text import may_hold_unstorable, unstorable_number, unstorable_text
from service.store.jobs.deliveries import seen_delivery
from service.web.errors import HttpError

router = APIRouter(tags=["webhooks"])


# Bodies of deliveries whose signature is still unchecked stay in memory up to this size, then
# go to a temporary file: a forged 24 MB post costs the service no more than this.
UNCHECKED_IN_MEMORY = 1 << 20
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def _claimed_signature(header: str | None) -> str:
    """The digest the header claims: 401 before any of the body is read where there is none."""
    if not header:
        raise HttpError(401, "missing X-Hub-Signature-256: set the webhook's secret on GitHub")
    algorithm, _, signature = header.partition("=")
    if algorithm != "sha256" or not _HEX_DIGEST.fullmatch(signature):
        raise HttpError(
            401, "X-Hub-Signature-256 is not sha256= and 64 hex digits, as GitHub sends it"
        )
    return signature


def _check_signature(claimed: str, expected: str) -> None:
    # Constant time, so the response time says nothing about the signature.
    if not same_secret(claimed, expected):
        raise HttpError(
            401,
            "X-Hub-Signature-256 does not match the body: "
            "is KERNELWATCH_WEBHOOK_SECRET the secret set on GitHub?",
        )


async def read_signed_body(request: Request, secret: str, header: str | None, limit: int) -> bytes:
    """The body once its signature holds. Refused on the header alone where it claims none;
    else hashed as it streams in (413 past `limit`), held in memory only up to
    UNCHECKED_IN_MEMORY, and returned only when the digest matches."""
    claimed = _claimed_signature(header)
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha256)
    with tempfile.SpooledTemporaryFile(max_size=UNCHECKED_IN_MEMORY) as held:
        async for chunk in raw_body(request, limit):
            mac.update(chunk)
            held.write(chunk)
        _check_signature(claimed, mac.hexdigest())
        held.seek(0)
        return held.read()


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
        raise HttpError(
            503,
            "webhooks are off: set KERNELWATCH_WEBHOOK_SECRET to the secret "
            "configured on GitHub and restart the service",
        )
    body = await read_signed_body(
        request, settings.webhook_secret, x_hub_signature_256, settings.webhook_max_bytes
    )
    if not x_github_event:
        raise InvalidReference("missing X-GitHub-Event header")
    if not x_github_delivery:
        raise InvalidReference("missing X-GitHub-Delivery header")
    previous = await run_in_threadpool(seen_delivery, factory, x_github_delivery)
    if previous is None:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidReference(f"the signed body is not JSON: {exc}") from exc
        except RecursionError:
            raise too_deep(f"the {x_github_event} payload") from None
        check_depth(payload, f"the {x_github_event} payload")
        unstorable = unstorable_text(payload) if may_hold_unstorable(body) else None
        unstorable = unstorable or unstorable_number(payload)
        if unstorable:
            raise Unprocessable(f"invalid {x_github_event} payload: {unstorable} cannot be stored")
        try:
            previous = await run_in_threadpool(
                receive, factory, settings, x_github_delivery, x_github_event, payload
            )
        except ValidationError as exc:
            return validation_response(list(exc.errors()), f"{x_github_event} payload")
    # 202 where the delivery set work going or was accepted and left alone; 200 where it was
    # done with at once (a ping, a tag, a deleted branch, a closed pull request, a redelivery).
    status = 200 if previous.redelivery or previous.done == "done" else 202
    return JSONResponse(
        status_code=status,
        content={
            "detail": previous.detail,
            "job_ids": previous.job_ids,
            "redelivery": previous.redelivery,
        },
    )

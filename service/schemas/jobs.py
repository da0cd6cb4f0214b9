"""Bodies and answers of the queue, runner and webhook routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from service.models import Job, Runner
from service.models.runner import claimable_labels
from service.schemas.document import Sha
from service.schemas.names import GitBranch, RepositoryName
from service.schemas.text import StorableText

LabelName = Annotated[str, StringConstraints(pattern=r"^[\w.-]{1,100}$", max_length=100)]
LabelValue = Annotated[str, StringConstraints(max_length=200)]
# A runner claims by the keys of its labels' subsets (service.store.jobs.queue): more labels than
# these are never matched, and a job's key is stored in, and indexed by, a 1000-wide column.
MAX_LABELS = 10
MAX_LABEL_KEY_BYTES = 1000


def label_key(labels: dict[str, Any]) -> str:
    """The labels as one text, "k1=v1,k2=v2" in key order: how a job and a runner match."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def check_labels(labels: dict[str, str]) -> dict[str, str]:
    """At most MAX_LABELS labels whose key is at most MAX_LABEL_KEY_BYTES bytes of UTF-8."""
    if len(labels) > MAX_LABELS:
        raise ValueError(f"{len(labels)} labels; at most {MAX_LABELS}")
    size = len(label_key(labels).encode())
    if size > MAX_LABEL_KEY_BYTES:
        raise ValueError(f"the labels take {size} bytes as k=v,k=v; at most {MAX_LABEL_KEY_BYTES}")
    return labels


Labels = Annotated[dict[LabelName, LabelValue], AfterValidator(check_labels)]


class JobCreate(StorableText):
    model_config = ConfigDict(extra="forbid")

    repository: RepositoryName
    sha: Sha
    branch: GitBranch = "main"
    # Handed to `git clone` by the runners: a leading "-" would be read as an option.
    clone_url: Annotated[str, StringConstraints(max_length=1000, pattern=r"^$|^[^-]")] | None = None
    labels: Labels | None = Field(
        default=None, description="required runner labels; default: the repository's label sets"
    )


class JobPublic(BaseModel):
    id: int
    repository: str
    commit: str
    branch: str
    kind: str
    state: str
    required_labels: dict[str, Any]
    attempt: int
    max_attempts: int
    runner: str | None
    lease_expires_at: datetime | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    summary: str
    failure: str
    payload: dict[str, Any] = {}

    @classmethod
    def of(cls, job: Job, repository: str, runner: str | None) -> JobPublic:
        return cls(
            id=job.id,
            repository=repository,
            commit=job.commit_sha,
            branch=job.branch,
            kind=job.kind,
            state=job.state,
            required_labels=job.required_labels,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            runner=runner,
            lease_expires_at=job.lease_expires_at,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            summary=job.summary,
            failure=job.failure,
            payload=job.payload,
        )


class JobsQueued(BaseModel):
    detail: str
    job_ids: list[int]


class ClaimedJob(BaseModel):
    """What a runner needs to run the job, and the secret that proves this attempt is its own."""

    job: JobPublic
    clone_url: str | None
    attempt_token: str


class AttemptBody(StorableText):
    model_config = ConfigDict(extra="forbid")

    attempt_token: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class FailureBody(AttemptBody):
    # The body is a small one, 64 KiB at most (service.api.small_bodies): 60,000 characters of
    # plain text fit; the runner cuts a log to what fits whatever its characters.
    log_tail: Annotated[str, StringConstraints(max_length=60_000)] = Field(
        "", description="the log's last characters; the whole body is at most 64 KiB"
    )
    retry: bool = Field(False, description="requeue if attempts remain (e.g. an infra failure)")


MAX_ENVIRONMENT_DEPTH = 16


class RunnerRegister(StorableText):
    model_config = ConfigDict(extra="forbid")

    host: Annotated[str, StringConstraints(max_length=300)] = ""
    labels: Labels = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)

    @field_validator("environment")
    @classmethod
    def _not_too_deep(cls, environment: dict[str, Any]) -> dict[str, Any]:
        # What a runner reports of its host is a few levels deep; a JSON column's writer
        # recurses, and a body nested hundreds deep once failed it with a 500.
        stack: list[tuple[Any, int]] = [(environment, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_ENVIRONMENT_DEPTH:
                raise ValueError(f"nests deeper than {MAX_ENVIRONMENT_DEPTH} levels")
            children = node.values() if isinstance(node, dict) else node
            if isinstance(node, dict | list):
                stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
        return environment


class RunnerHealth(StorableText):
    """What a runner says of its host: healthy, or not with the reason."""

    # The description says what the validator below refuses: no reason beside healthy=false.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"healthy": {"const": False}}},
            "then": {
                "required": ["reason"],
                "properties": {"reason": {"pattern": "\\S"}},
            },
        },
    )

    healthy: bool
    reason: Annotated[str, StringConstraints(max_length=2000)] = ""

    @model_validator(mode="after")
    def _reason_when_unhealthy(self) -> RunnerHealth:
        if not self.healthy and not self.reason.strip():
            raise ValueError("reason: say what is wrong with the host (e.g. the failing check)")
        return self


class RunnerPublic(BaseModel):
    name: str
    host: str
    labels: dict[str, Any] = Field(description="given with the token: they bound what it claims")
    reported_labels: dict[str, Any] = Field(
        default_factory=dict, description="what the runner reported: they narrow, never widen"
    )
    claims_by: dict[str, Any] = Field(
        default_factory=dict, description="the labels it claims jobs by (runner=<name> included)"
    )
    last_seen_at: datetime | None
    current_job_id: int | None
    revoked: bool
    environment: dict[str, Any]
    healthy: bool = Field(description="false once the runner said its host cannot run jobs")
    unhealthy_since: datetime | None = None
    unhealthy_reason: str = ""

    @classmethod
    def of(cls, runner: Runner) -> RunnerPublic:
        return cls(
            name=runner.name,
            host=runner.host,
            labels=runner.labels,
            reported_labels=runner.reported_labels or {},
            claims_by=claimable_labels(runner),
            last_seen_at=runner.last_seen_at,
            current_job_id=runner.current_job_id,
            revoked=runner.revoked_at is not None,
            environment=runner.environment,
            healthy=runner.unhealthy_since is None,
            unhealthy_since=runner.unhealthy_since,
            unhealthy_reason=runner.unhealthy_reason or "",
        )

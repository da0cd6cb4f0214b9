"""The ORM models; importing this package registers every table on Base.metadata."""

from service.models.alert import Alert, AlertEvent, ChangePoint
from service.models.base import Base
from service.models.job import Job, WebhookDelivery
from service.models.notification import Notification, NotificationTarget
from service.models.profile import NcuKernel, TimelineEntry
from service.models.pull_request import PullRequest
from service.models.repository import Commit, Repository
from service.models.run import BuildResource, CorrectnessOutcome, Run, RunWorkload
from service.models.runner import Runner
from service.models.series import Result, Series
from service.models.verdict import Confirmation, MeasureVerdict, Verdict, WorkVerdict

__all__ = [
    "Alert",
    "AlertEvent",
    "Base",
    "BuildResource",
    "ChangePoint",
    "Commit",
    "Confirmation",
    "CorrectnessOutcome",
    "Job",
    "MeasureVerdict",
    "NcuKernel",
    "Notification",
    "NotificationTarget",
    "PullRequest",
    "Repository",
    "Result",
    "Run",
    "RunWorkload",
    "Runner",
    "Series",
    "TimelineEntry",
    "Verdict",
    "WebhookDelivery",
    "WorkVerdict",
]

"""A run was judged: the one place that fans its verdicts out to what follows outside the
service (the commit's GitHub status, a pull request's comment), whoever judged it: the request
that stored it (`analyse_in_request`) or the analysis worker (service.runs.worker). Outgoing
notifications are written with the verdicts' alerts (service.evaluation.alerts.lifecycle) and
delivered by service.integrations.notify."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from service.core.settings import Settings
from service.integrations.github import api, comments, statuses


def wanted(settings: Settings) -> bool:
    """Whether anything outside hears of judged runs (a GitHub token is set)."""
    return api.enabled(settings)


def report(factory: sessionmaker[Session], settings: Settings, run_uuid: str) -> None:
    """The commit's status, and a pull request's comment, for a judged run; never raises."""
    statuses.report_run(factory, settings, run_uuid)
    comments.report_pull_request(factory, settings, run_uuid)

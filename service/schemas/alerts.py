"""Alerts and comparisons as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from service.models.alert import TriageState
from service.schemas.metrics import CHANGE, FRACTION, SeriesPublic
from service.schemas.text import StorableText


class AlertEventPublic(BaseModel):
    from_state: str | None
    to_state: str
    actor: str
    note: str
    at: datetime


class AlertPublic(BaseModel):
    id: int
    state: str
    summary: str
    change: float = Field(description=CHANGE)
    confirmed_change: float | None = Field(description=f"the confirming run's {CHANGE}")
    series: SeriesPublic
    branch: str
    commit: str
    base_commit: str | None
    first_bad_commit: str | None
    fixed_by_commit: str | None
    confirm_job_id: int | None
    attribution: dict[str, Any]
    bisect: dict[str, Any] = {}
    note: str
    updated_by: str
    created_at: datetime
    updated_at: datetime
    events: list[AlertEventPublic] = []


class AlertPatch(StorableText):
    model_config = ConfigDict(extra="forbid")

    state: TriageState
    note: Annotated[str, StringConstraints(max_length=5000)] = ""
    actor: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "admin"


class AlertGroupKey(BaseModel):
    repository: str
    branch: str
    commit: str = Field(description="where the change starts: the first bad commit a bisection "
                        "named, else the commit the alerts were found at")  # fmt: skip
    kernel: str | None = Field(description="the kernel of the alerts' top-ranked cause")
    cause: str | None = Field(description="that cause's kind; none: an alert of its own")


class AlertGroupPublic(BaseModel):
    """Alerts of one change: the same commit, kernel and cause (service.analysis.alert_groups)."""

    headline: str
    key: AlertGroupKey
    cause: str | None = Field(description="the cause's kind in words")
    alert_ids: list[int] = Field(description="the largest change first")
    states: list[str] = Field(description="the alerts' states, each once")
    alerts: list[AlertPublic]


class AlertGroupTriage(StorableText):
    """The alerts of a group, triaged together: all of them or none."""

    model_config = ConfigDict(extra="forbid")

    alert_ids: Annotated[
        list[Annotated[int, Field(ge=1, le=2**31 - 1)]], Field(min_length=1, max_length=1000)
    ]
    state: TriageState
    note: Annotated[str, StringConstraints(max_length=5000)] = ""
    actor: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "admin"


class CompareAlert(BaseModel):
    id: int
    state: str
    summary: str = Field(description="its attribution in one line: which kernel, and why")


class CompareRow(BaseModel):
    series: SeriesPublic
    base_median: float
    head_median: float
    change: float = Field(description=CHANGE)
    p_value: float
    q_value: float
    floor: float = Field(
        default=0.0,
        description="the smallest change of a kernel of this duration that a verdict may call "
        f"a regression ({FRACTION})",
    )
    significant: bool = Field(
        description="beyond chance (BH q at most 0.01 over the rows) and beyond `floor`: what a "
        "verdict would call a change"
    )
    alert: CompareAlert | None = Field(
        default=None, description="the series' alert at the head (opened or bisected there)"
    )


class ComparisonPublic(BaseModel):
    base: str
    head: str
    repository: str
    rows: list[CompareRow]
    only_in_base: list[SeriesPublic]
    only_in_head: list[SeriesPublic]

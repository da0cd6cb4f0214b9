"""The trends page's choices (/trends, /trends.json, /trends.csv): all of them live in the URL."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import Depends, Query
from pydantic import Field

from service.web.deps import MAX_ID


@dataclass
class TrendQuery:
    """Every choice of the trends page; all of it lives in the URL."""

    repository: str | None = None
    branch: str | None = None
    metric: str = "duration"
    workload: list[str] = field(default_factory=list)
    kernel: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    series: list[int] = field(default_factory=list)
    points: int = 200
    log: bool = False
    # "change" (from each series' first level) or "value"; None: change, or value on a log axis
    scale: str | None = None

    def query_string(self, **override: Any) -> str:
        values = {**asdict(self), **override}
        pairs: list[tuple[str, Any]] = []
        for key, value in values.items():
            if isinstance(value, list):
                pairs += [(key, v) for v in value]
            elif isinstance(value, bool):
                if value:
                    pairs.append((key, 1))
            elif value is not None:
                pairs.append((key, value))
        return urlencode(pairs)


def trend_query(
    repository: str | None = None,
    branch: str | None = None,
    metric: str = Query("duration", max_length=200),
    workload: list[str] = Query([], description="repeatable; default: every workload"),
    kernel: list[str] = Query([], description="repeatable; default: every kernel"),
    fingerprint: str | None = None,
    series: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Query(
        [], description="repeatable series ids; overrides the filters"
    ),
    points: int = Query(200, ge=2, le=1000, description="newest commits per series"),
    log: bool = Query(
        False,
        description="logarithmic y axis of values (implies scale=value; beside scale=change "
        "refused: a change has no log axis)",
    ),
    scale: Literal["change", "value"] | None = Query(
        None,
        description="y as each series' change from its first level (the median of its "
        "medians before its first change point), or as values; default: change",
    ),
) -> TrendQuery:
    return TrendQuery(
        repository=repository or None,
        branch=branch or None,
        metric=metric,
        workload=[w for w in workload if w],
        kernel=[k for k in kernel if k],
        fingerprint=fingerprint or None,
        series=series,
        points=points,
        log=log,
        scale=scale,
    )


TrendQueryDep = Annotated[TrendQuery, Depends(trend_query)]

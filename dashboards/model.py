"""The plain data the figure builders take: no ORM rows, no pydantic, nothing of the service."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class TrendPoint:
    """One commit's statistics of one series."""

    sha: str
    committed_at: datetime
    author: str
    subject: str
    median: float
    q1: float
    q3: float


@dataclass(frozen=True)
class TrendMarker:
    """Something that happened at a commit of a series: a change point, an alert, or the commit
    that redefined its workload in place (the line before it is the series it took over)."""

    kind: str  # "change_point", "alert" or "redefined"
    sha: str
    committed_at: datetime
    text: str
    # Where to draw it when the series has no point at that commit (e.g. a segment median).
    value: float | None = None


@dataclass(frozen=True)
class TrendLine:
    label: str
    unit: str
    points: list[TrendPoint]
    markers: list[TrendMarker] = field(default_factory=list)


@dataclass(frozen=True)
class ShareRow:
    """One kernel's part of a step, like a row of nsys's cuda_gpu_kern_sum."""

    kernel: str
    calls: int
    total_ns: float
    share: float


@dataclass(frozen=True)
class ChangeBar:
    """A relative change of one series; `category` picks the colour (a verdict name)."""

    label: str
    change: float
    category: str
    hover: str = ""
    target: float | None = None  # the series' class target: the smallest change to catch


@dataclass(frozen=True)
class VerdictColumn:
    """The verdict counts of one run, for the overview's recent-runs chart."""

    sha: str
    label: str
    counts: dict[str, int]
    # Regressions measured in this run that a bisection placed at an earlier commit of its
    # push (counted there, not in `counts`): first bad sha -> how many.
    bisected: dict[str, int] = field(default_factory=dict)

"""Figures reach the pages as the same JSON plotly itself would write, without its copies."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from plotly.utils import PlotlyJSONEncoder

from dashboards.model import TrendLine, TrendMarker, TrendPoint
from dashboards.trend import trend_figure
from service.pages.render import plain_figure


def test_the_plain_figure_is_what_plotly_serialises() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    points = [
        TrendPoint(
            sha=f"{i:040x}",
            committed_at=start + timedelta(hours=i),
            author="Ada",
            subject=f"change {i}",
            median=100.0 + i % 3,
            q1=99.0,
            q3=102.0,
        )
        for i in range(50)
    ]
    marker = TrendMarker("change_point", points[20].sha, points[20].committed_at, "shift", 101.0)
    line = TrendLine(label="gemm", unit="us", points=points, markers=[marker])
    fig = trend_figure([line], metric="duration")
    dump = lambda d: json.dumps(d, cls=PlotlyJSONEncoder, sort_keys=True)  # noqa: E731
    assert dump(plain_figure(fig)) == dump(fig.to_plotly_json())
    assert len(plain_figure(fig)["data"]) >= 2  # the line and its band, at least

"""Bar figures: pure functions from the plain data of `dashboards.model` to Plotly figures
(the trend figure is dashboards.trend)."""

from __future__ import annotations

import plotly.graph_objects as go

from dashboards.format import fmt_pct, fmt_value, short_sha
from dashboards.model import ChangeBar, ShareRow, VerdictColumn
from dashboards.plot import CHANGE_FLOOR, bar, layout, new_figure, scatter
from dashboards.style import LINE_COLOURS, VERDICT_ORDER, verdict_colour


def breakdown_figure(rows: list[ShareRow], *, title: str = "") -> go.Figure:
    """Share of the step's GPU time per kernel, largest on top (nsys's kernel summary)."""
    ordered = sorted(rows, key=lambda r: r.share)
    trace = bar(
        x=[r.share for r in ordered],
        y=[r.kernel for r in ordered],
        orientation="h",
        marker={"color": LINE_COLOURS[0]},
        text=[f"{r.share:.1%}" for r in ordered],
        textposition="auto",
        customdata=[[fmt_value(r.total_ns / 1000, "us"), r.calls] for r in ordered],
        hovertemplate=(
            "<b>%{y}</b><br>%{x:.1%} of the step<br>%{customdata[0]} in "
            "%{customdata[1]} call(s)<extra></extra>"
        ),
    )
    return new_figure(
        [trace],
        layout(
            title={"text": title} if title else None,
            height=max(160, 60 + 32 * len(rows)),
            xaxis={"tickformat": ".0%", "range": [0, 1], "title": {"text": "share of step"}},
            yaxis={"automargin": True},
            meta={"kind": "breakdown"},
        ),
    )


def change_figure(bars: list[ChangeBar], *, title: str = "") -> go.Figure:
    """Relative changes as horizontal bars coloured by verdict, biggest at the top, each with
    its series' class target (2%, 5% or 10% by duration) marked either side: a change is read
    against the smallest change that must be caught, and noise of 0.1% stays a sliver."""
    ordered = list(reversed(bars))
    trace = bar(
        x=[b.change for b in ordered],
        y=[b.label for b in ordered],
        orientation="h",
        marker={"color": [verdict_colour(b.category) for b in ordered]},
        text=[fmt_pct(b.change) for b in ordered],
        textposition="auto",
        customdata=[[b.category, b.hover] for b in ordered],
        hovertemplate="<b>%{y}</b><br>%{text} · %{customdata[0]}<br>%{customdata[1]}"
        "<extra></extra>",
    )
    targeted = [b for b in ordered if b.target]
    marks = scatter(
        x=[sign * b.target for sign in (-1, 1) for b in targeted],  # type: ignore[operator]
        y=[b.label for _ in (-1, 1) for b in targeted],
        mode="markers",
        marker={"symbol": "line-ns-open", "size": 16, "color": "#6b6b70", "line": {"width": 2}},
        name="class target",
        showlegend=False,
        hovertemplate="class target ±%{x:.0%}<extra></extra>",
    )
    reach = max([CHANGE_FLOOR, *(abs(b.change) for b in bars), *(b.target for b in targeted)])
    return new_figure(
        [trace, marks] if targeted else [trace],
        layout(
            title={"text": title} if title else None,
            height=max(180, 70 + 26 * len(bars)),
            showlegend=False,
            xaxis={
                "range": [-1.15 * reach, 1.15 * reach],
                # whole percents once the axis spans ±10% or more; tenths below
                "tickformat": "+.0%" if reach >= 0.1 else "+.1%",
                "zeroline": True,
                "title": {"text": "change · | the series' class target"},
            },
            yaxis={"automargin": True},
            meta={"kind": "change"},
        ),
    )


def verdict_history_figure(columns: list[VerdictColumn]) -> go.Figure:
    """Recent runs (oldest left) as stacked bars of their verdict counts."""
    traces = []
    labels = [c.label for c in columns]
    for verdict in VERDICT_ORDER:
        counts = [c.counts.get(verdict, 0) for c in columns]
        if not any(counts):
            continue
        traces.append(
            bar(
                x=labels,
                y=counts,
                name=verdict,
                marker={"color": verdict_colour(verdict)},
                customdata=[c.sha for c in columns],
                hovertemplate="%{x}<br>%{y} " + verdict + "<extra></extra>",
            )
        )
    moved = [sum(c.bisected.values()) for c in columns]
    if any(moved):  # the measured head of a bisected push: its regressions, hatched
        since = [", ".join(short_sha(sha)[:7] for sha in c.bisected) for c in columns]
        traces.append(
            bar(
                x=labels,
                y=moved,
                name="regressed, bisected earlier",
                marker={"color": verdict_colour("regressed"), "pattern": {"shape": "/"}},
                customdata=[[c.sha, s] for c, s in zip(columns, since, strict=True)],
                hovertemplate="%{x}<br>%{y} regressed: a bisection found they came in at "
                "%{customdata[1]}<extra></extra>",
            )
        )
    return new_figure(
        traces,
        layout(
            barmode="stack",
            height=300,
            xaxis={"type": "category", "title": {"text": "run (oldest left)"}, "automargin": True},
            yaxis={"title": {"text": "series"}},
            # Above the bars: below, the rotated commit labels and the axis title met it.
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
            margin={"l": 70, "r": 20, "t": 60, "b": 50},
            meta={"kind": "verdicts"},
        ),
    )

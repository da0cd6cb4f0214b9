"""Figure builders: pure functions from the plain data of `dashboards.model` to Plotly figures.

Every figure carries what the page's script and the browser tests look for in `meta`
(e.g. which traces are medians), so nothing has to parse trace names.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboards.format import fmt_pct, fmt_value, short_sha
from dashboards.model import ChangeBar, ShareRow, TrendLine, TrendMarker, VerdictColumn
from dashboards.style import LINE_COLOURS, VERDICT_ORDER, rgba, verdict_colour

_FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13}
_MARKER_STYLE = {
    "change_point": {"symbol": "diamond-open", "size": 14, "line": {"width": 2}},
    "alert": {"symbol": "x", "size": 13, "color": "#d62728", "line": {"width": 1}},
    "redefined": {"symbol": "star-triangle-up-open", "size": 15, "line": {"width": 2}},
}
_MARKER_NAMES = {
    "change_point": "change points",
    "alert": "alerts",
    "redefined": "workload redefined",
}
LEGEND_CHARS = 40  # a legend entry longer than this is cut, its full name in the hover
BASELINE_LINES_MAX = 6  # more lines than this: no baseline levels (they would crowd the plot)
_TIME_UNITS = frozenset({"ns", "us", "ms", "s"})


def short_label(label: str, limit: int = LEGEND_CHARS) -> str:
    """A legend entry: the label, or its start and end around an ellipsis (the kernel at the
    end of a series label tells lines apart as much as the workload at its start)."""
    if len(label) <= limit:
        return label
    tail = limit // 3
    return f"{label[: limit - tail - 1]}…{label[-tail:]}"


def baseline_level(line: TrendLine) -> tuple[str, str, float] | None:
    """The level a verdict compares with: from the newest change point shown (else the first
    point) to the newest point, the median of the medians; (start, end, level) or None."""
    if not line.points:
        return None
    starts = [m.committed_at for m in line.markers if m.kind == "change_point"]
    start = max(starts) if starts else line.points[0].committed_at
    values = sorted(p.median for p in line.points if p.committed_at >= start)
    if not values:
        return None
    mid = len(values) // 2
    level = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return start.isoformat(), line.points[-1].committed_at.isoformat(), level


def _figure(
    traces: list, layout: dict[str, object], arrays: dict[int, dict[str, object]] | None = None
) -> go.Figure:
    """A figure without plotly's per-value validation: the builders produce known-good values,
    and validating every point costs more than the page's database reads.

    `arrays` (trace index -> property -> values) go in after the figure is built: its
    constructor deep-copies whatever the traces hold (8 lines of 200 points with hover data:
    ~15 ms), while a property set on an unvalidated figure keeps the values as given."""
    fig = go.Figure(data=traces, layout=layout, _validate=False)
    for index, values in (arrays or {}).items():
        for name, value in values.items():
            setattr(fig.data[index], name, value)
    return fig


def _scatter(**kwargs: object) -> go.Scatter:
    return go.Scatter(_validate=False, **kwargs)


def _bar(**kwargs: object) -> go.Bar:
    return go.Bar(_validate=False, **kwargs)


def _layout(**extra: object) -> dict[str, object]:
    return {
        "template": "plotly_white",
        "font": _FONT,
        "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
        "hoverlabel": {"align": "left"},
        **extra,
    }


def trend_figure(lines: list[TrendLine], *, metric: str, log_y: bool = False) -> go.Figure:
    """Medians along a branch with a q1-q3 band, plus change-point and alert markers."""
    traces: list[go.Scatter] = []
    markers: list[go.Scatter] = []
    levels: list[go.Scatter] = []
    arrays: dict[int, dict[str, object]] = {}  # a line's points, set after building (_figure)
    medians: list[int] = []
    for i, line in enumerate(lines):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        # ISO strings, not datetimes: plotly deep-copies every value, datetimes slowly.
        x = [p.committed_at.isoformat() for p in line.points]
        group = f"line{i}"
        # The band is two traces: q1 (invisible), then q3 filled down to it.
        for stat, fill in (("q1", None), ("q3", "tonexty")):
            arrays[len(traces)] = {"x": x, "y": [getattr(p, stat) for p in line.points]}
            traces.append(
                _scatter(
                    mode="lines",
                    line={"width": 0, "color": colour},
                    fill=fill,
                    fillcolor=rgba(colour, 0.18),
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=group,
                    name=f"{line.label} {stat}",
                )
            )
        medians.append(len(traces))
        arrays[len(traces)] = {
            "x": x,
            "y": [p.median for p in line.points],
            "customdata": [
                [
                    short_sha(p.sha),
                    p.author,
                    p.committed_at.strftime("%Y-%m-%d %H:%M UTC"),
                    p.subject[:100],
                    fmt_value(p.median, line.unit),
                    fmt_value(p.q1, line.unit),
                    fmt_value(p.q3, line.unit),
                    p.sha,
                ]
                for p in line.points
            ],
        }
        full = line.label.replace("<", "&lt;")
        traces.append(
            _scatter(
                mode="lines+markers",
                name=short_label(line.label),
                legendgroup=group,
                line={"color": colour, "width": 2},
                marker={"size": 6},
                hovertemplate=(
                    f"<b>{full}</b><br>"
                    "<b>%{customdata[0]}</b> · %{customdata[1]} · %{customdata[2]}<br>"
                    "%{customdata[3]}<br>median <b>%{customdata[4]}</b> "
                    "(q1 %{customdata[5]}, q3 %{customdata[6]})<extra></extra>"
                ),
            )
        )
        level = baseline_level(line) if len(lines) <= BASELINE_LINES_MAX else None
        if level is not None:
            start, end, value = level
            levels.append(
                _scatter(
                    x=[start, end],
                    y=[value, value],
                    mode="lines",
                    line={"color": colour, "width": 1.5, "dash": "dash"},
                    legendgroup=group,
                    showlegend=False,
                    name=f"{short_label(line.label)}: baseline",
                    # No hover: its ends sit on the newest point, whose own hover matters more.
                    hoverinfo="skip",
                )
            )
        for kind in _MARKER_STYLE:
            _add_markers(markers, line, [m for m in line.markers if m.kind == kind], kind, colour)
    # Drawn last, so that no line or band of a later series covers a change point or an alert.
    traces += levels + markers
    units = {line.unit for line in lines}
    unit = units.pop() if len(units) == 1 else None
    title = f"{metric} ({unit})" if unit else metric
    if unit in _TIME_UNITS:
        title += " · lower is better"
    return _figure(
        traces,
        _layout(
            height=480,
            hovermode="closest",
            # Below the axis with no axis title to collide with (the ticks are dates); the
            # entries wrap on a narrow screen and the bottom margin grows with them.
            legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
            margin={"l": 70, "r": 20, "t": 30, "b": 40},
            yaxis={"title": {"text": title}, "type": "log" if log_y else "linear"},
            xaxis={"automargin": True},
            meta={"median_traces": medians, "kind": "trend"},
        ),
        arrays,
    )


def _add_markers(
    traces: list[go.Scatter], line: TrendLine, markers: list[TrendMarker], kind: str, colour: str
) -> None:
    if not markers:
        return
    by_sha = {p.sha: p for p in line.points}
    xs, ys, texts = [], [], []
    for m in markers:
        point = by_sha.get(m.sha)
        y = point.median if point is not None else m.value
        if y is None:
            continue  # outside the points shown and no level of its own: nothing to anchor it
        xs.append(m.committed_at.isoformat())
        ys.append(y)
        texts.append(f"<b>{short_sha(m.sha)}</b> {m.text}")
    style = dict(_MARKER_STYLE[kind])
    style.setdefault("color", colour)
    traces.append(
        _scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker=style,
            # One legend entry per kind, whichever series it marks: the hover names the series.
            name=_MARKER_NAMES[kind],
            legendgroup=f"{kind}",
            showlegend=not any(t.legendgroup == kind for t in traces),
            meta={"series": line.label},
            text=texts,
            hovertemplate="%{text}<extra>" + short_label(line.label, 30) + "</extra>",
        )
    )


def breakdown_figure(rows: list[ShareRow], *, title: str = "") -> go.Figure:
    """Share of the step's GPU time per kernel, largest on top (nsys's kernel summary)."""
    ordered = sorted(rows, key=lambda r: r.share)
    bar = _bar(
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
    return _figure(
        [bar],
        _layout(
            title={"text": title} if title else None,
            height=max(160, 60 + 32 * len(rows)),
            xaxis={"tickformat": ".0%", "range": [0, 1], "title": {"text": "share of step"}},
            yaxis={"automargin": True},
            meta={"kind": "breakdown"},
        ),
    )


def change_figure(bars: list[ChangeBar], *, title: str = "") -> go.Figure:
    """Relative changes as horizontal bars coloured by verdict; biggest at the top."""
    ordered = list(reversed(bars))
    bar = _bar(
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
    return _figure(
        [bar],
        _layout(
            title={"text": title} if title else None,
            height=max(180, 70 + 26 * len(bars)),
            xaxis={"tickformat": "+.1%", "zeroline": True, "title": {"text": "change"}},
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
            _bar(
                x=labels,
                y=counts,
                name=verdict,
                marker={"color": verdict_colour(verdict)},
                customdata=[c.sha for c in columns],
                hovertemplate="%{x}<br>%{y} " + verdict + "<extra></extra>",
            )
        )
    return _figure(
        traces,
        _layout(
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

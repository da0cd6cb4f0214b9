"""The trend figure: each series' medians along a branch with their q1-q3 band, the baseline
level, and markers for change points, alerts and redefinitions.

x is a commit's place in the branch (every line's commits together, oldest left), not its time:
a burst of commits in one minute and a quiet week take the same room per commit. y is the value,
or each series' change from its first level (the median of its medians before its first change
point): series of 10 us and of 600 us then share one axis, and a +14% step reads +14% whatever
the series' size.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections.abc import Callable, Iterable

import plotly.graph_objects as go

from dashboards.format import fmt_pct, fmt_value, short_sha, wrapped
from dashboards.model import TrendLine, TrendMarker, TrendPoint
from dashboards.plot import CHANGE_FLOOR, layout, new_figure, scatter
from dashboards.style import LINE_COLOURS, rgba

MARKER_STYLE = {
    "change_point": {"symbol": "diamond-open", "size": 14, "line": {"width": 2}},
    "alert": {"symbol": "x", "size": 13, "color": "#d62728", "line": {"width": 1}},
    "redefined": {"symbol": "star-triangle-up-open", "size": 15, "line": {"width": 2}},
}
MARKER_NAMES = {
    "change_point": "change points",
    "alert": "alerts",
    "redefined": "workload redefined",
}
LEGEND_CHARS = 40  # a legend entry longer than this is cut, its full name in the hover
BASELINE_LINES_MAX = 6  # more lines than this: no baseline levels (they would crowd the plot)
# An alert's ✕ sits this share of the y span above its point: a change point's ◇ at the same
# commit stays visible beside it.
ALERT_LIFT = 0.06
MAX_TICKS = 10
# Characters a tooltip's line holds: ~260 px, so that one at the plot's left edge fits a
# 390 px phone screen beside its point.
HOVER_WIDTH = 36
_TIME_UNITS = frozenset({"ns", "us", "ms", "s"})


def short_label(label: str, limit: int = LEGEND_CHARS) -> str:
    """A legend entry: the label, or its start and end around an ellipsis (the kernel at the
    end of a series label tells lines apart as much as the workload at its start)."""
    if len(label) <= limit:
        return label
    tail = limit // 3
    return f"{label[: limit - tail - 1]}…{label[-tail:]}"


def commit_order(lines: list[TrendLine]) -> list[TrendPoint]:
    """Every commit any line has a point at, once, oldest first (one point stands for it)."""
    seen: dict[str, TrendPoint] = {}
    for line in lines:
        for p in line.points:
            seen.setdefault(p.sha, p)
    return sorted(seen.values(), key=lambda p: (p.committed_at, p.sha))


def first_level(line: TrendLine) -> float | None:
    """The median of the line's medians before its first change point (all of them if none)."""
    shifts = [m.committed_at for m in line.markers if m.kind == "change_point"]
    first = min(shifts) if shifts else None
    values = [p.median for p in line.points if first is None or p.committed_at < first]
    values = values or [p.median for p in line.points]
    return statistics.median(values) if values else None


def baseline_level(line: TrendLine) -> tuple[str, str, float] | None:
    """The level a verdict compares with: from the newest change point shown (else the first
    point) to the newest point, the median of the medians; (start sha, end sha, level)."""
    if not line.points:
        return None
    starts = [m for m in line.markers if m.kind == "change_point"]
    start = max(starts, key=lambda m: m.committed_at) if starts else None
    since = start.committed_at if start else line.points[0].committed_at
    values = [p.median for p in line.points if p.committed_at >= since]
    if not values:
        return None
    first = start.sha if start else line.points[0].sha
    return first, line.points[-1].sha, statistics.median(values)


class _Axis:
    """Where a commit sits on x: its index in the branch's order; a commit no line has a
    point at (an alert's, say) sits between its neighbours by time, if it falls among them."""

    def __init__(self, order: list[TrendPoint]) -> None:
        self.index = {p.sha: i for i, p in enumerate(order)}
        self.times = [p.committed_at for p in order]
        self.order = order

    def x(self, sha: str, marker: TrendMarker | None = None) -> float | None:
        if sha in self.index:
            return self.index[sha]
        if marker is None or not self.times:
            return None
        if not self.times[0] < marker.committed_at < self.times[-1]:
            return None  # before or after every commit shown: it has no place on this axis
        return bisect_left(self.times, marker.committed_at) - 0.5

    def ticks(self, marked: Iterable[str] = ()) -> dict[str, object]:
        """Every step-th commit labelled, and every marked one (a change point's, an alert's:
        the commit a person looks for), the regular labels too close to a marked one dropped."""
        step = max(1, math.ceil(len(self.order) / MAX_TICKS))
        keep = {i for sha in marked if (i := self.index.get(sha)) is not None}
        room = max(1, step // 2)
        values = [v for v in range(0, len(self.order), step)
                  if all(v == k or abs(v - k) >= room for k in keep)]  # fmt: skip
        values = sorted({*values, *keep})
        return {"tickvals": values, "ticktext": [short_sha(self.order[i].sha) for i in values]}


def trend_figure(
    lines: list[TrendLine], *, metric: str, log_y: bool = False, relative: bool = False
) -> go.Figure:
    """Medians along a branch with a q1-q3 band, plus change-point and alert markers; with
    `relative`, each line as its change from its first level (values where a line has no
    positive level to divide by)."""
    levels = [first_level(line) for line in lines]
    relative = relative and not log_y and all(v is not None and v > 0 for v in levels)
    axis = _Axis(commit_order(lines))
    scales: list[Callable[[float], float]] = [
        (lambda v, ref=ref: v / ref - 1) if relative else (lambda v: v)  # type: ignore[misc]
        for ref in levels
    ]
    medians = [scales[i](p.median) for i, line in enumerate(lines) for p in line.points]
    lift = _lift(medians, relative, log_y)
    traces: list[go.Scatter] = []
    on_top: list[go.Scatter] = []
    arrays: dict[int, dict[str, object]] = {}  # a line's points, set after building
    median_traces: list[int] = []
    for i, line in enumerate(lines):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        scale = scales[i]
        x = [axis.index[p.sha] for p in line.points]
        group = f"line{i}"
        for stat, fill in (("q1", None), ("q3", "tonexty")):  # the band: q3 filled down to q1
            arrays[len(traces)] = {"x": x, "y": [scale(getattr(p, stat)) for p in line.points]}
            traces.append(
                scatter(
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
        median_traces.append(len(traces))
        arrays[len(traces)] = {
            "x": x,
            "y": [scale(p.median) for p in line.points],
            "customdata": _hover_rows(line, levels[i] if relative else None),
        }
        full = wrapped(line.label.replace("<", "&lt;"), HOVER_WIDTH)
        traces.append(
            scatter(
                mode="lines+markers",
                name=short_label(line.label),
                legendgroup=group,
                line={"color": colour, "width": 2},
                marker={"size": 6},
                hovertemplate=(
                    f"<b>{full}</b><br>"
                    "<b>%{customdata[0]}</b> · %{customdata[2]}<br>%{customdata[1]}<br>"
                    "%{customdata[3]}<br>median <b>%{customdata[4]}</b><br>"
                    "q1 %{customdata[5]}, q3 %{customdata[6]}%{customdata[8]}<extra></extra>"
                ),
            )
        )
        level = baseline_level(line) if len(lines) <= BASELINE_LINES_MAX else None
        if level is not None:
            start, end, value = level
            on_top.append(
                scatter(
                    x=[axis.x(start), axis.x(end)],
                    y=[scale(value)] * 2,
                    mode="lines",
                    line={"color": colour, "width": 1.5, "dash": "dash"},
                    legendgroup=group,
                    showlegend=False,
                    name=f"{short_label(line.label)}: baseline",
                    # its ends sit on the newest point, whose hover matters more
                    hoverinfo="skip",
                )
            )
        for kind in MARKER_STYLE:
            marked = [m for m in line.markers if m.kind == kind]
            lifted = (lambda y: y * lift) if log_y else (lambda y: y + lift)
            _add_markers(
                on_top,
                line,
                marked,
                kind,
                colour,
                axis,
                scale,
                lifted if kind == "alert" else (lambda y: y),
            )
    # Drawn last, so that no line or band of a later series covers a change point or an alert.
    traces += on_top
    return new_figure(
        traces,
        layout(
            height=480,
            hovermode="closest",
            # Below the axis with no axis title to collide with (the ticks are commits); the
            # entries wrap on a narrow screen and the bottom margin grows with them.
            legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
            margin={"l": 70, "r": 20, "t": 30, "b": 40},
            yaxis=_y_axis(lines, metric, log_y, relative, _drawn_ys(arrays, on_top)),
            xaxis={
                "automargin": True,
                "zeroline": False,
                **axis.ticks(m.sha for line in lines for m in line.markers),
            },
            meta={
                "median_traces": median_traces,
                "kind": "trend",
                "scale": "change" if relative else "value",
                "commits": [p.sha for p in axis.order],
            },
        ),
        arrays,
    )


def _drawn_ys(arrays: dict[int, dict[str, object]], traces: list[go.Scatter]) -> list[float]:
    ys = [y for values in arrays.values() for y in values["y"]]  # type: ignore[attr-defined]
    return ys + [y for t in traces for y in (t.y or ()) if y is not None]


def _lift(ys: list[float], relative: bool, log_y: bool) -> float:
    """How far above its point an alert's ✕ goes: added on a linear axis, a factor on a log one."""
    if not ys:
        return 1.0 if log_y else 0.0
    low, high = min(ys), max(ys)
    if log_y:
        return (high / low) ** ALERT_LIFT if low > 0 and high > low else 1.05
    span = max(high - low, 2 * CHANGE_FLOOR if relative else abs(high) * 0.1 or 1.0)
    return ALERT_LIFT * span


def _y_axis(
    lines: list[TrendLine], metric: str, log_y: bool, relative: bool, ys: list[float]
) -> dict[str, object]:
    units = {line.unit for line in lines}
    unit = units.pop() if len(units) == 1 else None
    better = " · lower is better" if unit in _TIME_UNITS else ""
    if not relative:
        title = f"{metric} ({unit})" if unit else metric
        return {"title": {"text": title + better}, "type": "log" if log_y else "linear"}
    low, high = min([*ys, -CHANGE_FLOOR]), max([*ys, CHANGE_FLOOR])
    pad = 0.06 * (high - low)
    return {
        "title": {"text": f"{metric} change from first level{better}"},
        "type": "linear",
        "range": [low - pad, high + pad],
        # whole percents once the axis spans tens of them; tenths below that
        "tickformat": "+.0%" if high - low >= 0.2 else "+.1%",
        "zeroline": True,
    }


def _hover_rows(line: TrendLine, reference: float | None) -> list[list[str]]:
    return [
        [
            short_sha(p.sha),
            p.author[:HOVER_WIDTH],
            p.committed_at.strftime("%Y-%m-%d %H:%M UTC"),
            wrapped(p.subject, HOVER_WIDTH),
            fmt_value(p.median, line.unit),
            fmt_value(p.q1, line.unit),
            fmt_value(p.q3, line.unit),
            p.sha,
            f"<br>{fmt_pct(p.median / reference - 1)} from the first level "
            f"({fmt_value(reference, line.unit)})"
            if reference
            else "",
        ]
        for p in line.points
    ]


def _next_point(line: TrendLine, marker: TrendMarker) -> TrendPoint | None:
    """The line's first point after a commit it has no point at: where that commit's effect
    was measured (an alert a bisection moved to an unmeasured commit of a push)."""
    return next((p for p in line.points if p.committed_at > marker.committed_at), None)


def _add_markers(
    traces: list[go.Scatter],
    line: TrendLine,
    markers: list[TrendMarker],
    kind: str,
    colour: str,
    axis: _Axis,
    scale: Callable[[float], float],
    lift: Callable[[float], float],
) -> None:
    if not markers:
        return
    by_sha = {p.sha: p for p in line.points}
    xs, ys, texts = [], [], []
    for m in markers:
        point = by_sha.get(m.sha) or (_next_point(line, m) if m.value is None else None)
        y = point.median if point is not None else m.value
        x = axis.x(m.sha, m)
        if y is None or x is None:
            continue  # outside the points shown and no level of its own: nothing to anchor it
        xs.append(x)
        ys.append(lift(scale(y)))
        texts.append(f"<b>{short_sha(m.sha)}</b> {m.text}")
    style = dict(MARKER_STYLE[kind])
    style.setdefault("color", colour)
    traces.append(
        scatter(
            x=xs,
            y=ys,
            mode="markers",
            marker=style,
            # One legend entry per kind, whichever series it marks: the hover names the series.
            name=MARKER_NAMES[kind],
            legendgroup=f"{kind}",
            showlegend=not any(t.legendgroup == kind for t in traces),
            meta={"series": line.label},
            text=texts,
            hovertemplate="%{text}<extra>" + short_label(line.label, 30) + "</extra>",
        )
    )

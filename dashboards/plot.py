"""Plotly building blocks shared by the figure builders: unvalidated traces and a house layout.

Every figure carries what the page's script and the browser tests look for in `meta`
(e.g. which traces are medians), so nothing has to parse trace names.
"""

from __future__ import annotations

import plotly.graph_objects as go

# A change axis spans at least the tightest class target (2%) either way, so that noise of 0.1%
# is drawn as the sliver it is.
CHANGE_FLOOR = 0.02
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13}


def new_figure(
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


def scatter(**kwargs: object) -> go.Scatter:
    return go.Scatter(_validate=False, **kwargs)


def bar(**kwargs: object) -> go.Bar:
    return go.Bar(_validate=False, **kwargs)


def layout(**extra: object) -> dict[str, object]:
    return {
        "template": "plotly_white",
        "font": FONT,
        "margin": {"l": 70, "r": 20, "t": 30, "b": 50},
        "hoverlabel": {"align": "left"},
        **extra,
    }

"""Rendering the dashboard pages: Jinja templates from `dashboards/`, figures as JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import plotly.graph_objects as go
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from plotly.utils import PlotlyJSONEncoder

from dashboards.format import FILTERS
from dashboards.style import VERDICT_ORDER, verdict_colour

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
STATIC_DIR = Path(__file__).resolve().parent / "static"  # the pages' CSS, JavaScript, icon
templates = Jinja2Templates(directory=TEMPLATES_DIR)
templates.env.filters.update(FILTERS)
templates.env.globals.update(verdict_colour=verdict_colour, verdict_order=VERDICT_ORDER)


def plotly_js() -> Path:
    """plotly.js as bundled in the installed `plotly` package: the pages work offline."""
    return Path(str(resources.files("plotly") / "package_data" / "plotly.min.js"))


def plain_figure(fig: go.Figure) -> dict[str, Any]:
    """The figure's data and layout as plain dicts, as `to_plotly_json()` gives them.

    Read from the figure's own store: `to_plotly_json()` deep-copies every value first (and
    fig.to_json() re-validates them), which cost a trend page of 8 x 200 points tens of ms."""
    data, layout = getattr(fig, "_data", None), getattr(fig, "_layout", None)
    if isinstance(data, list) and isinstance(layout, dict) and not fig.frames:
        return {"data": data, "layout": layout}
    return fig.to_plotly_json()


def figure_json(fig: go.Figure) -> Markup:
    """The figure as JSON that is safe inside <script type="application/json">.

    orjson writes what the builders put in a figure (numbers, strings, lists, dicts) ten times
    faster than PlotlyJSONEncoder, which encodes, decodes and encodes again; anything else (a
    NumPy string array, a pandas value) still goes through plotly's encoder. Non-finite numbers
    come out as null either way."""
    plain = plain_figure(fig)
    try:
        text = orjson.dumps(plain, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    except TypeError:
        text = json.dumps(plain, cls=PlotlyJSONEncoder, separators=(",", ":"))
    return Markup(text.replace("</", "<\\/"))


def render(
    request: Request, name: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    figures = {key: figure_json(fig) for key, fig in context.pop("figures", {}).items()}
    return templates.TemplateResponse(
        request, name, {**context, "figures": figures}, status_code=status_code
    )


def error_page(request: Request, status: int, detail: str) -> HTMLResponse:
    """A readable page for the errors the JSON twins answer as {"detail": ...} (the app's error
    handlers call it for a page's request: service/api/errors.py)."""
    titles = {400: "Bad request", 404: "Not found", 409: "Conflict", 422: "Invalid request",
              503: "Unavailable for a moment"}  # fmt: skip
    return render(
        request,
        "error.html",
        {"title": titles.get(status, "Error"), "status": status, "detail": detail},
        status_code=status,
    )


def json_twin(data: dict[str, Any]) -> Response:
    """A page's JSON twin. orjson writes the plain data (datetimes, dataclasses included) many
    times faster than jsonable_encoder walks it (a trends page's: 58 ms); models and anything
    else orjson does not know go through jsonable_encoder."""
    return Response(
        orjson.dumps(data, default=jsonable_encoder, option=orjson.OPT_NON_STR_KEYS),
        media_type="application/json",
    )


def html_page(request: Request, template: str, build: Callable[[], dict[str, Any]]) -> HTMLResponse:
    """The page `build` describes; an error it raises is answered by the app's handlers, as a
    page (service/api/errors.py)."""
    return render(request, template, build())

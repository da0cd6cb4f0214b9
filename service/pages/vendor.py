"""plotly.js for the pages, served from the installed plotly package (no CDN)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse

from service.pages.render import plotly_js

router = APIRouter(tags=["pages"])


@router.get("/static/vendor/plotly.min.js", include_in_schema=False)
def plotly_bundle() -> FileResponse:
    """plotly.js from the installed plotly package (no CDN)."""
    return FileResponse(
        plotly_js(),
        media_type="text/javascript",
        headers={"Cache-Control": "public, max-age=86400"},
    )

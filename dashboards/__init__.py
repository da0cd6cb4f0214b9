"""Dashboards: Plotly figure builders (plain data in, figures out) and the page templates.

Nothing here imports the service: the routes turn database rows into the plain types of
`dashboards.model` and render `templates/` with the files of `static/`.
"""

from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
STATIC_DIR = Path(__file__).resolve().parent / "static"
# A history the real runner recorded on an H100, for `kernelwatch demo` (see its manifest).
DEMO_DIR = Path(__file__).resolve().parent / "demo_history"

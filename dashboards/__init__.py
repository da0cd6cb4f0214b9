"""Dashboards: Plotly figure builders (plain data in, figures out) and the plain types they take.

Nothing here imports the service: the pages (service/pages/, with their templates and static
files) turn database rows into the plain types of `dashboards.model`.
"""

from pathlib import Path

# A history the real runner recorded on an H200, for `kernelwatch demo` (see its manifest).
DEMO_DIR = Path(__file__).resolve().parent / "demo_history"

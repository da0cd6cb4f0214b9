"""Colours shared by the figures and the templates, so a verdict looks the same everywhere."""

from __future__ import annotations

VERDICT_COLOURS: dict[str, str] = {
    "regressed": "#d62728",
    "broken": "#7b1fa2",
    "missing": "#ff7f0e",
    "improved": "#2ca02c",
    "pending": "#e0a800",  # a change on a level too young to know its wander: the next run says
    "new": "#1f77b4",
    "unchanged": "#9e9e9e",
}
# Worst first: the overview's stacked bars and the badges list verdicts in this order.
VERDICT_ORDER = tuple(VERDICT_COLOURS)

# Colour-blind-safe categorical palette (Okabe-Ito) for trend lines.
LINE_COLOURS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#8C8C8C",  # Okabe-Ito's black, lightened: legible on the dark theme's background too
)


def verdict_colour(verdict: str | None) -> str:
    return VERDICT_COLOURS.get(verdict or "", "#bdbdbd")


def rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"

"""Alerts: suspected, confirmed by an interleaved rerun, bisected, attributed to their causes,
grouped, triaged and closed as fixed."""

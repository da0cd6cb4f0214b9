"""Whole histories through the real service (webhook, ingest, analysis, alerts, pages): the
scenarios that span the packages, one story per module."""

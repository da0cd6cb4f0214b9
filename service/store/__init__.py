"""Queries and writes of stored rows: it raises the domain's errors (service.core.errors),
imports no analysis and decides no verdict."""

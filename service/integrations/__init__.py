"""Reporting to systems outside kernelwatch (GitHub commit statuses)."""

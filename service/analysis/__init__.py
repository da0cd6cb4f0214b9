"""Numerics on plain arrays: rank tests and verdict rules, level shifts and segments, cause
ranking, work counters. No SQL: service.evaluation reads and writes for them."""

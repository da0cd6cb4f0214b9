"""The database side of analysis: what it reads and writes (verdicts, alerts, change points,
bisection, the backlog of runs to judge) and how its results are read back, calling the
numerics of service.analysis."""

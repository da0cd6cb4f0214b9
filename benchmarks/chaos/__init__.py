"""Chaos and load: kill -9 the agent mid-job and the service mid-ingest; then 8 agents, 2 service
processes and 20 readers on one database with 500 jobs. Prints what was tried and what survived.

    python -m benchmarks.chaos [--database sqlite|postgres] [--agent-kills 20] [--service-kills 20]
        [--load-jobs 500] [--load-agents 8] [--readers 20] [--read-seconds 15]
        [--only crash|load] [--postgres-url URL]

Agent kills: `kernelwatch-runner agent` works jobs of the CPU fixture suite (tests/runner/cpu_suite)
and is sent SIGKILL at three points in turn: just after its claim, while it measures, and once
its result document is in the spool (posted or not); it is restarted at once on the same spool.
Service kills: `kernelwatch serve` is sent SIGKILL while a POST /api/v1/runs of a whole result
document (120 workloads with ncu metrics) is in flight, with an agent at work beside it, and is
restarted on the same port; the poster resends the same document until it is answered. Then each
job must have succeeded exactly once, each run be stored once and whole, every spooled result
have arrived (or been dropped because its lease was gone and the job measured again), and the
analysis backlog be worked off.

Load: two `kernelwatch serve` processes on one database, 8 agent processes (the runner's real
agent: claim, lease, spool, post; the measurement replaced by a copy of a recorded document) and
500 jobs; each must be claimed exactly once and stored. Then 20 concurrent readers fetch the
pages and the commit-metrics API from both processes; their p95 must stay within 500 ms.
Exits 1 when something did not survive or a target was missed.

`python -m benchmarks.chaos stub-agent ...` is the load's agent process (internal).
"""

"""Small runs of benchmarks/chaos/: kill -9 of the agent and the service, and the load.

The benchmark itself does 20 kills of each and 500 jobs; here 3 kills of each on both databases
and 40 jobs on PostgreSQL, the whole path with real processes. Every row of its tables must
pass: jobs succeeded once, runs whole, spooled results arrived, backlog worked off.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.chaos.__main__ import main
from tests.conftest import POSTGRES_ENV

DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _database(kind: str) -> list[str]:
    if kind == "postgres" and not os.environ.get(POSTGRES_ENV):
        pytest.skip(f"{POSTGRES_ENV} is not set")
    return ["--database", kind]


def _rows(out: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| ") and not line.startswith(("| check", "| ---"))
    ]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind", DATABASES)
def test_kill_9_of_agent_and_service_loses_nothing(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*_database(kind), "--only", "crash", "--agent-kills", "3", "--service-kills", "3"])
    out = capsys.readouterr().out
    print(out)
    rows = _rows(out)
    assert [r[0] for r in rows].count("kills") == 2, out
    assert all(r[-1] == "PASS" for r in rows), out
    assert code == 0, out
    spooled = next(r for r in rows if r[0] == "results spooled when killed")
    assert int(spooled[1]) >= 1, "no kill caught a spooled result"


@pytest.mark.timeout(240)
def test_agents_and_two_service_processes_claim_each_job_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = "--only load --load-jobs 40 --load-agents 4 --readers 5 --read-seconds 3"
    code = main([*_database("postgres"), *args.split()])
    out = capsys.readouterr().out
    print(out)
    rows = _rows(out)
    claimed = next(r for r in rows if r[0] == "jobs claimed exactly once")
    assert claimed[2].startswith("40 claimed once, 40 claims"), out
    assert any(r[0].startswith("`GET /api/v1/commits/{sha}/metrics`") for r in rows), out
    assert all(r[-1] == "PASS" for r in rows), out
    assert code == 0, out

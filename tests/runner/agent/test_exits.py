"""runner.agent.exits: the agent's exit statuses as whatever restarts it reads them. Each
status means one thing (none is 2, a usage error's), the configuration error is sysexits.h's
EX_CONFIG (systemd shows "status=78/CONFIG"), and the module needs nothing beyond the standard
library: the CLI returns these before the runner's own dependencies are checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.agent import exits

ROOT = Path(__file__).resolve().parents[3]


def test_each_status_means_one_thing_and_none_is_a_usage_error() -> None:
    codes = {
        "EXIT_OK": exits.EXIT_OK,
        "EXIT_REFUSED": exits.EXIT_REFUSED,
        "EXIT_HOST": exits.EXIT_HOST,
        "EXIT_CONFIG": exits.EXIT_CONFIG,
    }
    assert len(set(codes.values())) == len(codes), codes
    assert 2 not in codes.values()  # argparse's usage errors and a failed host check at start
    assert exits.EXIT_OK == 0  # a stop is no failure: systemd's Restart=on-failure leaves it


@pytest.mark.skipif(not hasattr(os, "EX_CONFIG"), reason="sysexits.h codes are POSIX only")
def test_a_configuration_error_is_sysexits_ex_config() -> None:
    assert exits.EXIT_CONFIG == os.EX_CONFIG == 78


def test_the_statuses_import_without_the_runners_dependencies() -> None:
    """A host that lacks NumPy, httpx or rich still gets its exit status: those modules are
    made unimportable in a fresh interpreter before the import."""
    code = (
        "import sys\n"
        "for name in ('numpy', 'httpx', 'rich', 'cupy'):\n"
        "    sys.modules[name] = None\n"
        "from runner.agent.exits import EXIT_CONFIG\n"
        "print(EXIT_CONFIG, sorted(m for m in sys.modules if m.startswith('runner')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1) == [
        "78",
        "['runner', 'runner.agent', 'runner.agent.exits']\n",
    ]

"""runner.worker.ending: a worker whose results are sent runs its exit handlers and leaves
without the interpreter's teardown; $KERNELWATCH_WORKER_TEARDOWN=1 and the tools' modes tear
down as usual. On the CPU fixture suite, with a module that marks each of the two."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.measure.phase import run_phase
from runner.suite.load import load_suite
from runner.worker.ending import QUICK_MODES, TEARDOWN_ENV
from tests.runner.gitrepo import CPU_SUITE

MARKS = '''
import atexit as _atexit

_MARKS = os.environ.get("KW_EXIT_MARKS")


class _Teardown:
    """Finalized when the interpreter tears the module down, not before."""

    def __del__(self, join=os.path.join, pid=os.getpid, open=open) -> None:  # noqa: A002
        open(join(_MARKS, f"teardown-{pid()}"), "w").close()


if _MARKS:
    _atexit.register(lambda: open(os.path.join(_MARKS, f"atexit-{os.getpid()}"), "w").close())
    _teardown = _Teardown()
'''


@pytest.mark.parametrize("teardown", ["", "1"])
def test_a_worker_runs_its_exit_handlers_and_tears_down_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, teardown: str
) -> None:
    tree = shutil.copytree(CPU_SUITE, tmp_path / "suite")
    module = tree / "cpu_kernels.py"
    module.write_text(module.read_text() + MARKS)
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("KW_EXIT_MARKS", str(marks))
    monkeypatch.setenv(TEARDOWN_ENV, teardown)
    phase = run_phase(load_suite(tree), "check", ["fma[n=256]"])
    assert phase.outcomes["fma[n=256]"].result["passed"] is True  # its result came through
    kinds = sorted(p.name.split("-")[0] for p in marks.iterdir())
    assert kinds == (["atexit", "teardown"] if teardown else ["atexit"])
    assert "check" in QUICK_MODES and "profile" not in QUICK_MODES


SLOW_HANDLER = """
_atexit.register(lambda: __import__("time").sleep(0.3))
"""


@pytest.mark.parametrize("teardown", ["", "1"])
def test_the_parent_hears_how_long_the_exit_handlers_took_and_the_end_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, teardown: str
) -> None:
    """A suite whose exit handler takes 0.3 s: a quickly ended worker says so before it leaves,
    and the phase splits its closing seconds into the handlers' and the process's end after
    them; one torn down as usual says nothing (its closing stays whole)."""
    tree = shutil.copytree(CPU_SUITE, tmp_path / "suite")
    module = tree / "cpu_kernels.py"
    module.write_text(module.read_text() + "\nimport atexit as _atexit\n" + SLOW_HANDLER)
    monkeypatch.setenv(TEARDOWN_ENV, teardown)
    phase = run_phase(load_suite(tree), "time", ["fma[n=256]"], seed=0)
    assert phase.outcomes["fma[n=256]"].status == "ok"
    assert phase.closing >= 0.3
    if teardown:
        assert (phase.exit_handlers, phase.ended) == (0.0, 0.0)
    else:
        assert 0.3 <= phase.exit_handlers <= phase.closing
        assert 0.0 < phase.ended <= phase.closing - phase.exit_handlers + 0.05

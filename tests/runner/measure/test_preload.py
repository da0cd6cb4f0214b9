"""What a waiting timing worker imports ahead (runner.measure.preload): the installed frameworks
the suite's files import, or $KERNELWATCH_PRELOAD; through a real warm worker, before its ids."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from runner.measure.phase import WarmWorkers, run_phase
from runner.measure.preload import COMPILER, PRELOAD_ENV, named_in, preload, preload_for
from tests.runner.measure.test_phase import imported, marking_suite  # noqa: F401


def write(root: Path, name: str, text: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)


def test_the_frameworks_the_suites_files_import_are_named(tmp_path: Path) -> None:
    write(tmp_path, "kernels/workloads.py", "import os\n\ndef f():\n    import torch\n")
    write(tmp_path, "kernels/tl.py", "from triton.language import core as tl\n")
    assert named_in(tmp_path) == ["torch", "triton"]
    only_torch = tmp_path / "b"
    write(only_torch, "w.py", "import torchvision  # not torch\n# import triton\nimport torch.nn\n")
    assert named_in(only_torch) == ["torch"]
    none = tmp_path / "c"
    write(none, "w.py", '"""Kernels in CuPy, no torch."""\nimport cupy\n')
    write(none, ".venv/lib/site.py", "import torch\n")  # an environment's, not the suite's
    write(none, "notes.txt", "import torch\n")
    assert named_in(none) == []


def test_a_suite_that_calls_torch_compile_gets_the_compilers_modules_too(tmp_path: Path) -> None:
    write(tmp_path, "a/w.py", "import torch\nimport triton\n")
    write(tmp_path, "a/block.py", "def block(x):\n    return x\n\nfast = torch.compile(block)\n")
    assert named_in(tmp_path / "a") == ["torch", *COMPILER, "triton"]
    write(tmp_path, "b/w.py", "from torch import nn, compile\n")
    assert named_in(tmp_path / "b") == ["torch", *COMPILER]
    write(tmp_path, "c/w.py", "import torch\nimport torch.compiler  # not a compile\n")
    assert named_in(tmp_path / "c") == ["torch"]
    write(tmp_path, "d/w.py", "fast = torch.compile(f)  # torch never imported here\n")
    assert named_in(tmp_path / "d") == []


def test_only_installed_ones_are_preloaded_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "w.py", "import torch\nimport triton\n")
    monkeypatch.delenv(PRELOAD_ENV, raising=False)
    installed = [m for m in ("torch", "triton") if m in sys.modules or _found(m)]
    assert preload_for(tmp_path) == installed
    monkeypatch.setenv(PRELOAD_ENV, " json, colorsys ,")
    assert preload_for(tmp_path) == ["json", "colorsys"]
    monkeypatch.setenv(PRELOAD_ENV, "")
    assert preload_for(tmp_path) == []


def _found(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_a_module_that_does_not_import_is_left_to_the_suite() -> None:
    assert preload(["no_such_module_kw", "json"]) == ["json"]


def test_waiting_check_and_timing_workers_import_them_before_their_ids_and_nothing_else_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    marking_suite,  # noqa: F811
) -> None:
    site = tmp_path / "site"
    marks = tmp_path / "framework-imported"
    write(site, "kw_framework.py", "import os\nopen(os.environ['KW_FRAMEWORK'], 'a')"
                                   ".write(f'{os.getpid()}\\n')\n")  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("KW_FRAMEWORK", str(marks))
    monkeypatch.setenv(PRELOAD_ENV, "kw_framework")
    warm = WarmWorkers(marking_suite, [("time", 1), ("check", 0), ("list", 0)])
    try:
        assert warm.preload == ["kw_framework"]
        ((timer, _),) = warm.waiting[("time", 1)]
        ((checker, _),) = warm.waiting[("check", 0)]
        ((lister, _),) = warm.waiting[("list", 0)]
        deadline = time.monotonic() + 30
        while len(_lines(marks)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the listing worker had as long
        assert sorted(_lines(marks)) == sorted([str(timer.pid), str(checker.pid)])
        assert imported(marking_suite) == []  # and none of the suite's code
        phase = run_phase(marking_suite, "time", ["fma[n=256]"], seed=1, warm=warm)
        assert phase.outcomes["fma[n=256]"].status == "ok"
        phase = run_phase(marking_suite, "check", ["fma[n=256]"], warm=warm)
        assert phase.outcomes["fma[n=256]"].status == "ok"
    finally:
        warm.close()
    assert str(lister.pid) not in _lines(marks)  # a listing needs none of it


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []

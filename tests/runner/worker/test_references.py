"""A workload's reference kept by what determines it (runner.worker.references): computed once,
then read back while its code, what it calls and its inputs are the same; computed again when
any of them changes; never kept where what determines it cannot be said. Each "commit" is a
fresh copy of a suite's modules, imported under new names, as a new worktree is."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.worker.process import generic_check, normalize_check
from runner.worker.references import References

HELPERS = """
import numpy as np

SCALE = 2.0


def doubled(x):
    return x * SCALE


class Model:
    # Held by the instance and called by its reference as self.model, as a torch module is.
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        return x * 0.0
"""

WORKLOADS = '''
import numpy as np

from {package} import helpers

CALLS = []


class Instance:
    def __init__(self, seed, n):
        self.x = np.random.default_rng(seed).standard_normal(n)
        self.out = np.zeros(n)
        self.model = helpers.Model([np.ones(2), np.ones(2)])

    def poison(self):
        self.out[:] = np.nan

    def launch(self):
        self.out[:] = self.x * {launch_factor}

    def fetch(self):
        return {{"out": self.out}}

    def reference(self):
        """{doc}"""
        CALLS.append(1)
        return {{"out": helpers.doubled(self.x) + {offset} + self.model(self.x)}}

    def close(self):
        pass


class Workload:
    id, precision, tolerance = "double[n=64]", "fp64", 1e-6

    def __init__(self, n=64):
        self.n = n

    def prepare(self, seed):
        return Instance(seed, self.n)
'''


PACKAGE = "kw_reference_suite"


class Commits:
    """Worktrees of one suite, each a folder of its own holding the same package."""

    def __init__(self, root: Path) -> None:
        self.root, self.count = root, 0
        self.kept = References(root / "cache" / "references")

    def check(self, seed: int = 0, n: int = 64, **edits: Any) -> tuple[dict, int]:
        """The check of a commit whose suite has `edits`; the result and how many times the
        reference was computed."""
        self.count += 1
        worktree = self.root / f"worktree-{self.count}"
        tree = worktree / PACKAGE
        tree.mkdir(parents=True)
        fields = {"doc": "The double.", "offset": "0.0", "launch_factor": "2.0",
                  "helpers": HELPERS} | edits  # fmt: skip
        (tree / "__init__.py").write_text("")
        (tree / "helpers.py").write_text(fields.pop("helpers"))
        (tree / "workloads.py").write_text(WORKLOADS.format(package=PACKAGE, **fields))
        forget()
        sys.path.insert(0, str(worktree))
        try:
            module = importlib.import_module(f"{PACKAGE}.workloads")
            result = normalize_check(
                generic_check(module.Workload(n), seed, self.kept, str(worktree))
            )
        finally:
            sys.path.remove(str(worktree))
        return result, len(module.CALLS)


def forget() -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[name]


@pytest.fixture
def commits(tmp_path: Path) -> Commits:
    yield Commits(tmp_path)
    forget()


def test_a_reference_is_computed_once_and_kept_while_nothing_it_depends_on_changes(
    commits: Commits,
) -> None:
    first, calls = commits.check()
    assert (first["passed"], calls) == (True, 1)
    assert first["reference"].startswith("computed in ")
    again, calls = commits.check()
    assert (again["passed"], calls, again["reference"]) == (
        True, 0, "kept from an earlier run of the same reference and inputs")  # fmt: skip
    # What the reference does not read: its docstring, the launch's code.
    assert commits.check(doc="Twice the input, in float64.")[1] == 0
    assert commits.check(launch_factor="2.0 + 0.0")[1] == 0


@pytest.mark.parametrize(
    "edit",
    [
        {"offset": "1e-3"},  # the reference's own code
        {"helpers": HELPERS.replace("SCALE = 2.0", "SCALE = 2.5")},  # a constant it reads
        {"helpers": HELPERS.replace("x * SCALE", "x * SCALE + 0.0 * x.sum()")},  # a function
        {"seed": 1},  # its inputs
        {"helpers": HELPERS.replace("return x * 0.0", "return x * 0.0 + 0.0")},  # self.model's
        {"n": 65},
    ],
)
def test_a_change_of_what_determines_the_reference_computes_it_again(
    commits: Commits, edit: dict[str, Any]
) -> None:
    assert commits.check()[1] == 1
    result, calls = commits.check(**edit)
    assert calls == 1, edit
    assert result["reference"].startswith("computed in ")


def test_a_wrong_launch_still_fails_against_a_kept_reference(commits: Commits) -> None:
    commits.check()
    result, calls = commits.check(launch_factor="2.001")
    assert (result["passed"], calls) == (False, 0)


def test_an_unreadable_entry_is_computed_again_and_the_cache_stays_in_its_bound(
    commits: Commits,
) -> None:
    commits.check()
    (entry,) = commits.kept.folder.glob("*.npz")
    entry.write_bytes(b"not an npz")
    assert commits.check()[1] == 1
    (entry,) = commits.kept.folder.glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:40])  # a zip cut short
    assert commits.check()[1] == 1
    commits.kept.limit = 0  # each new entry evicts the older ones, itself last
    commits.check(seed=3)
    assert list(commits.kept.folder.glob("*.npz")) == []


def test_a_reference_that_reads_what_cannot_be_digested_is_not_kept(commits: Commits) -> None:
    """A global the reference reads whose identity is an address (an object of no stable
    description): the key cannot be said, so nothing is kept, and nothing is read back."""
    opaque = HELPERS.replace("return x * SCALE", "return x * SCALE if THING else x")
    opaque += "\n\nTHING = object()\n"
    for _ in range(2):
        result, calls = commits.check(helpers=opaque)
        assert (result["passed"], calls) == (True, 1)
        assert result["reference"] == "computed (not kept: the reference reads 'THING', a object)"
    assert not commits.kept.folder.exists()


def test_a_reference_whose_key_cannot_be_read_is_computed_not_a_failure(
    commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library's object the reference reads whose description raises: the check passes, its
    reference computed, and the log says why it was not kept."""
    loud = "class Loud:\n    def __repr__(self):\n        raise RuntimeError('no')\n"
    (commits.root / "kw_outside_lib.py").write_text(f"{loud}\n\nTHING = Loud()\n")
    monkeypatch.syspath_prepend(str(commits.root))
    monkeypatch.delitem(sys.modules, "kw_outside_lib", raising=False)
    broken = HELPERS.replace("return x * SCALE", "return x * SCALE if THING is not None else x")
    broken = broken.replace("SCALE = 2.0", "from kw_outside_lib import THING\n\nSCALE = 2.0")
    result, calls = commits.check(helpers=broken)
    assert (result["passed"], calls) == (True, 1)
    assert result["reference"] == "computed (not kept: RuntimeError reading it)"

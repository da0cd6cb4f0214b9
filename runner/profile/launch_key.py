"""A workload's ncu section reused by what its launch ran, not by which files a commit touched.

ncu's counters of a deterministic launch are fixed by what it executes: the kernels' compiled
code, their launch configuration and order, the data they read, and the GPU, driver, ncu and
section set that measure them. A check worker records these for each workload
(runner.worker.launch_record: CUPTI's kernel records and loaded modules, checksums of the
instance's arrays taken on the GPU, its scalars and the code of its `launch`); here they become a
key. A commit that refactors Python, edits a comment in a module every workload imports or
changes one workload's parameters keeps the sections of every launch whose key is unchanged; one
that changes a kernel re-profiles the launches that run it.

What the key leaves out, and why it still holds: the Python around the launch (it decides
nothing ncu counts except through the kernels, their configuration, their inputs and the
scalars the instance holds, which are all in the key); an array the launch writes (an output or
scratch space: its earlier content is not what the kernels compute from; a workload that updates
an input in place keeps a pristine copy for `reset()`, which is in the key). What it cannot see:
a scalar argument computed inside a helper function from constants of that helper (not an
attribute of the instance, not in `launch`'s own code) that changes what a kernel executes
without changing its code, configuration or inputs; a scalar held only by an object of the
suite's own package that holds no array (such an object is read as a service, a kernel library
and its build, whose paths and compile seconds differ with every fresh build).

Where a workload has no signature (signatures off, no CUPTI, a kernel whose code no loaded
module held) the section is looked up by the commit's files as before
(runner.profile.reuse): never by a guess.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PARTS = ("kernels", "code", "inputs", "written", "scalars", "launch_code")
WORDS = {  # what a changed part of the signature is called in the runner's log
    "kernels": "the kernels launched or their launch configuration",
    "code": "a kernel's compiled code",
    "inputs": "the inputs",
    "written": "the shapes of what the launch writes",
    "scalars": "the instance's scalars",
    "launch_code": "the code of launch()",
}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def usable(signature: Any) -> bool:
    """Whether a check's signature has every part (one that said why it has none has not)."""
    return isinstance(signature, Mapping) and all(p in signature for p in PARTS)


def workload_key(context: str, info: Mapping[str, Any], signature: Mapping[str, Any]) -> str:
    """The key of a workload's section: the host and profile configuration (`context`), the
    workload's listing entry and its launch's signature."""
    return digest({"context": context, "workload": dict(info),
                   "launch": {p: signature[p] for p in PARTS}})  # fmt: skip


def kernel_key(
    context: str, info: Mapping[str, Any], signature: Mapping[str, Any], identifier: str
) -> str:
    """What determined one kernel's counters (a kernel entry's `determinants`): the workload's
    key with the code of the kernel named apart. ncu names a kernel demangled, CUPTI mangled:
    `identifier` is the name's identifier (runner.profile.reuse.search_name), which a mangled
    name holds with its length before it."""
    own = {k: c for k, c in signature["code"].items()
           if k == identifier or f"{len(identifier)}{identifier}" in k}  # fmt: skip
    return digest({"workload": workload_key(context, info, signature), "kernel": own})


def differences(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """The parts of two signatures that differ, in words (why a section was profiled again)."""
    return [WORDS[p] for p in PARTS if then.get(p) != now.get(p)]


class LaunchSections:
    """Sections kept by launch signature under `root`/launch (the latest signature of each
    workload under `root`/launch-latest, to say what changed), for one host and configuration
    (`context`); `commit`: the commit whose sections `store` keeps."""

    def __init__(self, root: Path, context: str, commit: str) -> None:
        self.root, self.context, self.commit = root, context, commit

    def _path(self, info: Mapping[str, Any], signature: Mapping[str, Any]) -> Path:
        return self.root / "launch" / f"{workload_key(self.context, info, signature)[:40]}.json"

    def _latest(self, info: Mapping[str, Any]) -> Path:
        name = digest({"context": self.context, "workload": dict(info)})[:40]
        return self.root / "launch-latest" / f"{name}.json"

    def lookup(self, info: Mapping[str, Any], signature: Any) -> tuple[dict[str, Any], str] | None:
        """(the section, with a reason that says so, and the commit it was profiled at) stored
        for this workload's launch with the same signature; None where none is, the signature
        is unusable, or the entry is torn or foreign (never trusted)."""
        if not usable(signature):
            return None
        path = self._path(info, signature)
        try:
            entry = json.loads(path.read_text())
            section = dict(entry["section"])
            same = entry["signature"] == {p: signature[p] for p in PARTS}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not same:
            return None
        os.utime(path)  # recently used: kept longest
        commit, when = str(entry.get("commit", "?")), entry.get("captured_at", "")
        note = f"reused: profiled at commit {commit[:12]} ({when}); its kernels' code, launch " \
               "configuration, inputs and host are unchanged"  # fmt: skip
        return {**section, "reason": note}, commit

    def why(self, info: Mapping[str, Any], signature: Any) -> list[str]:
        """What changed since this workload's last stored launch, in words; nothing where there
        is none to compare with."""
        try:
            then = json.loads(self._latest(info).read_text())["signature"]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return differences(then, signature) if usable(signature) else []

    def store(self, info: Mapping[str, Any], section: Mapping[str, Any], signature: Any) -> None:
        """Keep a freshly profiled section by its launch's signature (none without one)."""
        if not usable(signature):
            return
        entry = {"signature": {p: signature[p] for p in PARTS},
                 "section": {**section, "reason": ""}, "commit": self.commit,
                 "captured_at": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
        write_entry(self._path(info, signature), entry)
        write_entry(self._latest(info), {"signature": entry["signature"]})


def write_entry(target: Path, entry: Mapping[str, Any]) -> None:
    """`entry` as JSON at `target`, whole or absent, also with two agents on one host."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=target.parent, suffix=".tmp", delete=False) as f:
        json.dump(entry, f)
    os.replace(f.name, target)

"""Reusing a workload's ncu section from an earlier commit whose code it ran is the same.

First by what the launch ran (runner.profile.launch_key: the kernels' compiled code, launch
configuration and inputs its check recorded with CUPTI): a commit that changed only Python
around the launches keeps every section (`lookup_launch`). What follows is the key by the
commit's files, for workloads whose check could record no such signature, and the per-kernel
merge of a workload whose kernels' code changed in part.

ncu costs ~21 ms a replay pass on the H100, 18 passes a launch: ~35 s for the default suite's 66
launches, nearly half a commit's time (benchmarks/ncu_cost.py). Most commits change one kernel,
and a launch of unchanged code on the same GPU, driver and tools, with the same inputs, gives
the same counters. So a workload's section is kept on the runner host, keyed by everything the
launch depends on, and reused while none of it changed:

- the host: GPU (model and card), driver, CUDA runtime, CuPy, nvcc, ncu, Python, and the
  profile's own configuration (metrics, sections, launches, the runner's profiling code);
- the workload: its listing entry (id, parameters, FLOPs, bytes) and seed;
- the code around the kernels, by git's blob ids: the Python files of the commit that the
  profile worker imported (runner.worker reports them: a commit that changes only the
  service's Python, its tests or benchmarks in the same repository keeps every section) and every
  other file but native sources (CUDA/C/C++: NATIVE_SUFFIXES) and prose (documents, pictures:
  PROSE_SUFFIXES); a change to the suite's Python, its configuration or its data (or a file
  added) re-profiles every workload;
- the kernels it launched when it was profiled (ncu's function names): their code in the build
  outputs that define them (in a cubin, that kernel's own sections and the data every kernel
  may read, runner.profile.cubin: a change to another kernel of the same file leaves it alone; in
  any other ELF file or PTX holding the name, the whole file), every build output that is
  not code (data a workload might read; BUILD_REPORT aside, the runner's own report of the
  build), and, for a name no code output holds, every output that cannot be searched for names
  (a fatbin: compressed) and, where a native source holds the name (compiled at run time),
  every native source.

A name found nowhere is a library's kernel (cuBLAS, CuPy's generated ones): the host's versions
and the Python code cover it. A reused section says so in its `reason` (the commit it was
profiled at).

Each kernel's share of those dependencies is kept too, so a workload whose kernels' code changed
(only that: the Python code, the host and the build's data are the same, so it launches the same
kernels) gets `Found.stale` naming them: runner.profile.capture profiles only those kernels'
launches (an ncu kernel filter) and `merge` puts them beside the unchanged kernels' entries of the
earlier section (a training step whose forward GEMM changed keeps its other kernels' entries). On
the H100 a commit that changed `gemm_bias_act_fwd` profiled 10 launches instead of 19 that way
(11.3 s instead of 17.7-19.1 s for the ncu pass; .dev2.sh of 2026-11-26). What it assumes: an
unchanged kernel's counters do not depend on what a changed kernel before it wrote (its inputs'
values); a kernel whose work depends on such values (data-dependent branches, sparsity) shows a
change in timing that its reused counters would not explain, and the section says which kernels
were reused and from which commit.

Sections are kept under <cache>/ncu-profiles, the least recently used removed past MAX_ENTRIES.
$KERNELWATCH_NCU_REUSE=0 profiles every workload.

The same key, per kernel, goes into the document whether or not sections are reused: each kernel
entry says what determined its counters (`determinants`: a digest of the host, the profile's
configuration, the workload, the commit's code but native sources and prose, and that kernel's
own code) and at which commit they were measured (`profiled_at`; a reused entry keeps the commit
it was profiled at). The service learns how far each counter of a kernel moves between two
measurements whose determinants are equal (service.analysis.work), and never from one reused
measurement seen twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.profile import cubin, launch_key
from runner.profile.ncu import MAX_REASON

NATIVE_SUFFIXES = frozenset({".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp"})
# Documents and pictures: no launch reads them, and a commit that touches only its README should
# not cost a whole ncu pass (~50 s on the H100).
PROSE_SUFFIXES = frozenset({".md", ".rst", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf"})
BUILD_REPORT = "build.json"
MAX_ENTRIES = 5000
REUSE_ENV = "KERNELWATCH_NCU_REUSE"
ENVIRONMENT_KEYS = ("fingerprint", "driver_version", "cuda_runtime_version", "cupy_version",
                    "nvcc_version", "ncu_version")  # fmt: skip
_ELF = b"\x7fELF"
_FATBIN = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian


def enabled() -> bool:
    return os.environ.get(REUSE_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


def tracked_files(worktree: Path) -> dict[str, str]:
    """Path -> git blob id of every file of the commit checked out in `worktree`."""
    out = subprocess.run(["git", "ls-tree", "-r", "-z", "HEAD"], cwd=worktree,
                         capture_output=True, check=True, timeout=120).stdout  # fmt: skip
    files = {}
    for entry in out.decode(errors="surrogateescape").split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            files[path] = meta.split()[2]
    return files


def is_native(path: str) -> bool:
    return Path(path).suffix.lower() in NATIVE_SUFFIXES


def is_prose(path: str) -> bool:
    return Path(path).suffix.lower() in PROSE_SUFFIXES


class BuildOutputs:
    """The files a build wrote, by kind, each with its content hash."""

    def __init__(self, build_dir: Path) -> None:
        self.code: dict[str, bytes] = {}  # ELF and PTX: searchable for kernel names
        self.opaque: dict[str, str] = {}  # fatbins: names may be compressed
        self.data: dict[str, str] = {}  # everything else but the build's report
        for path in sorted(p for p in build_dir.rglob("*") if p.is_file()):
            rel = path.relative_to(build_dir).as_posix()
            if rel == BUILD_REPORT:
                continue
            content = path.read_bytes()
            if content.startswith(_ELF) or (b".version" in content[:4096]
                                             and b".target" in content[:4096]):  # fmt: skip
                self.code[rel] = content
            elif content.startswith(_FATBIN):
                self.opaque[rel] = hashlib.sha256(content).hexdigest()
            else:
                self.data[rel] = hashlib.sha256(content).hexdigest()
        self._hashes = {rel: hashlib.sha256(c).hexdigest() for rel, c in self.code.items()}
        self._kernels = {rel: cubin.kernel_hashes(c) or {} for rel, c in self.code.items()}

    def holding(self, name: str) -> dict[str, str]:
        """The code outputs that hold kernel `name`: 'file#kernel' -> the hash of that kernel's
        code in a cubin that defines it (runner.profile.cubin), else 'file' -> the whole file's."""
        identifier = search_name(name)
        needle = identifier.encode()
        found = {}
        for rel, content in self.code.items():
            if identifier in self._kernels[rel]:
                found[f"{rel}#{identifier}"] = self._kernels[rel][identifier]
            elif needle in content:
                found[rel] = self._hashes[rel]
        return found


def search_name(kernel: str) -> str:
    """The identifier of a kernel's name as ncu prints it, which its code holds verbatim:
    'void ns::gemm<128>(float *, int)' -> 'gemm' (a mangled name holds it too)."""
    depth, kept = 0, []
    for ch in kernel:  # template arguments out (they may hold parentheses), then parameters
        depth = max(0, depth + (ch == "<") - (ch == ">"))
        if depth == 0 and ch != ">":
            kept.append(ch)
    head = "".join(kept).split("(", 1)[0]
    words = head.replace("::", " ").split()
    return words[-1] if words else kernel


def dependencies(
    kernels: Iterable[str], outputs: BuildOutputs, native: Mapping[str, bytes], data: bool = True
) -> dict[str, str]:
    """What the launches of `kernels` depend on beyond the host and the non-native files:
    'build/<file>' and 'source/<path>' -> content hash (the module docstring says which);
    without `data`, the build's data outputs (which every kernel depends on) are left out."""
    deps = {f"build/{rel}": h for rel, h in outputs.data.items()} if data else {}
    unresolved = []
    for name in sorted(set(kernels)):
        found = outputs.holding(name)
        deps.update({f"build/{rel}": h for rel, h in found.items()})
        if not found:
            unresolved.append(name)
    if unresolved:
        deps.update({f"build/{rel}": h for rel, h in outputs.opaque.items()})
        needles = [search_name(name).encode() for name in unresolved]
        if any(needle in text for needle in needles for text in native.values()):
            deps.update({f"source/{p}": hashlib.sha256(t).hexdigest() for p, t in native.items()})
    return deps


@dataclass(frozen=True)
class Found:
    """A stored section of a workload: reusable whole (`stale` empty), or for every kernel but
    those in `stale` (its kernels whose code changed since `commit`: some or all)."""

    section: dict[str, Any]
    stale: tuple[str, ...]
    commit: str


def merge(found: Found, fresh: Mapping[str, Any]) -> dict[str, Any] | None:
    """`found`'s section with the stale kernels' entries from `fresh` (a pass that profiled
    only those), in the earlier order; None unless `fresh` holds every stale kernel."""
    profiled = {k["kernel"]: k for k in fresh.get("kernels", [])}
    if fresh.get("status") != "ok" or any(k not in profiled for k in found.stale):
        return None
    kernels = [profiled[k["kernel"]] if k["kernel"] in found.stale
               else {**k, "profiled_at": k.get("profiled_at") or found.commit}
               for k in found.section["kernels"]]  # fmt: skip
    kept = len(kernels) - len(found.stale)
    reason = (f"profiled at this commit: {', '.join(found.stale)} (code changed); "
              f"{kept} other kernel{'s' * (kept != 1)} reused from commit {found.commit[:12]} "
              "(code unchanged)") if kept else ""  # fmt: skip
    return {**found.section, "status": "ok", "reason": reason[:MAX_REASON], "kernels": kernels}


class ProfileReuse:
    """Sections of one run's workloads: looked up before the ncu pass, stored after it."""

    def __init__(
        self,
        cache: Path,
        worktree: Path,
        build_dir: Path,
        commit: str,
        environment: Mapping[str, Any],
        config: Mapping[str, Any],
        keep: bool = True,
    ) -> None:
        self.root = cache / "ncu-profiles"
        self.commit = commit
        self.keep = keep  # look up and store sections; without, only `stamp` the document's
        self._code_key: str | None = None
        files = tracked_files(worktree)
        self.code = {p: blob for p, blob in files.items()
                     if not is_native(p) and not is_prose(p)}  # fmt: skip
        self.native = {p: (worktree / p).read_bytes() for p in files
                       if is_native(p) and (worktree / p).is_file()}  # fmt: skip
        self.outputs = BuildOutputs(build_dir)
        host = {k: environment.get(k) for k in ENVIRONMENT_KEYS}
        host["gpu_uuid"] = (environment.get("gpu") or {}).get("uuid")
        host["python"] = (environment.get("host") or {}).get("python")
        self.context = launch_key.digest({"host": host, "config": config})
        self.launches = launch_key.LaunchSections(self.root, self.context, commit)

    def lookup_launch(self, info: Mapping[str, Any], signature: Any) -> Found | None:
        """The section stored for a launch of this workload with the same signature
        (runner.profile.launch_key), whatever files changed since; None where there is none."""
        if not self.keep:
            return None
        found = self.launches.lookup(info, signature)
        return None if found is None else Found(found[0], (), found[1])

    def why_profiled(self, info: Mapping[str, Any], signature: Any) -> list[str]:
        """What changed since this workload's last stored launch, in words."""
        return self.launches.why(info, signature)

    def code_of(self, imported: Iterable[str] | None) -> dict[str, str]:
        """The commit's files a section depends on: every one but native sources and prose,
        of the Python files only those the profile worker had imported (`imported`, paths in
        the worktree; None: every one)."""
        if imported is None:
            return dict(self.code)
        keep = set(imported)
        return {p: b for p, b in self.code.items() if not p.endswith(".py") or p in keep}

    def _same_code(self, stored: Any, every_python_file: bool) -> bool:
        """Whether the files a stored section depends on are this commit's: its Python files
        unchanged (with `every_python_file`, no Python file added either), and the other files
        (data any Python may read, a new one too) all the same."""
        if not isinstance(stored, dict):
            return False
        if every_python_file:
            return stored == self.code
        now = {p: b for p, b in self.code.items() if not p.endswith(".py")}
        then = {p: b for p, b in stored.items() if not p.endswith(".py")}
        python = all(self.code.get(p) == b for p, b in stored.items() if p.endswith(".py"))
        return now == then and python

    def _folder(self, info: Mapping[str, Any]) -> Path:
        return self.root / launch_key.digest({"context": self.context, "workload": info})[:40]

    def lookup(self, info: Mapping[str, Any]) -> Found | None:
        """The stored section of this workload: whole where its kernels' code is unchanged,
        else the most recent one with the same build data, naming the kernels whose code
        changed (`Found.stale`, all of them at worst); None where none has this context."""
        if not self.keep:
            return None
        entries = []
        folder = self._folder(info)
        paths = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
            if folder.is_dir() else []  # fmt: skip
        for path in paths:
            try:
                entry = json.loads(path.read_text())
                kernels, stored = list(entry["kernels"]), dict(entry["dependencies"])
                section = dict(entry["section"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a torn or foreign file: never trusted
            if not self._same_code(entry.get("code"), entry.get("imported") is not True):
                continue  # the Python it ran or the data it may read changed: profile again
            if dependencies(kernels, self.outputs, self.native) == stored:
                os.utime(path)  # recently used: kept longest
                commit, when = str(entry.get("commit", "?")), entry.get("captured_at", "")
                note = f"reused: profiled at commit {commit[:12]} ({when}); its kernels, " \
                       "build outputs, code and host are unchanged"  # fmt: skip
                return Found({**section, "reason": note}, (), commit)
            entries.append((path, entry, kernels, section))
        data = dependencies([], self.outputs, {})
        for path, entry, kernels, section in entries:
            per_kernel = entry.get("kernel_dependencies")
            if not isinstance(per_kernel, dict) or set(per_kernel) != set(kernels):
                continue  # kept before kernels' own dependencies were: whole or nothing
            if entry.get("data_dependencies") != data:
                continue  # data the Python side may read too: which kernels run may differ
            now = {k: dependencies([k], self.outputs, self.native, data=False) for k in kernels}
            os.utime(path)
            stale = tuple(k for k in kernels if now[k] != per_kernel[k])
            return Found(section, stale, str(entry.get("commit", "")))
        return None

    def store(
        self,
        info: Mapping[str, Any],
        section: Mapping[str, Any],
        imported: Iterable[str] | None = None,
        signature: Any = None,
    ) -> None:
        """Keep a freshly profiled section (status ok, with kernels) for later commits, by the
        commit's files and, where its check gave one, by its launch's `signature`;
        `imported`: the worktree's Python files the profile worker imported (None: unknown)."""
        if not self.keep or section.get("status") != "ok" or not section.get("kernels"):
            return
        self.launches.store(info, section, signature)
        kernels = [k["kernel"] for k in section["kernels"]]
        deps = dependencies(kernels, self.outputs, self.native)
        code = self.code_of(imported)
        entry = {
            "kernels": kernels,
            "code": code,
            "imported": imported is not None,  # its Python files: those imported, else all
            "dependencies": deps,
            "data_dependencies": dependencies([], self.outputs, {}),
            "kernel_dependencies": {
                k: dependencies([k], self.outputs, self.native, data=False) for k in kernels
            },
            "section": {**section, "reason": ""},
            "commit": self.commit,
            "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = self._folder(info) / f"{launch_key.digest({'deps': deps, 'code': code})[:40]}.json"
        launch_key.write_entry(target, entry)

    def stamp(
        self,
        info: Mapping[str, Any],
        section: dict[str, Any],
        profiled_at: str,
        signature: Any = None,
    ) -> dict[str, Any]:
        """`section` with each kernel entry's `determinants` and `profiled_at` (`profiled_at`
        where an entry does not say already: a fresh one's commit, or the commit a reused
        section was profiled at). The determinants are the launch's signature where the check
        gave one (runner.profile.launch_key), else the commit's files."""
        if not section.get("kernels"):
            return section
        usable = launch_key.usable(signature)
        if self._code_key is None and not usable:  # one digest of the files for every kernel
            self._code_key = launch_key.digest(self.code_of(None))
        kernels = []
        for entry in section["kernels"]:
            if usable:
                determinants = launch_key.kernel_key(self.context, info, signature,
                                                     search_name(entry["kernel"]))  # fmt: skip
            else:
                own = dependencies([entry["kernel"]], self.outputs, self.native)
                determinants = launch_key.digest({"context": self.context, "workload": info,
                                        "code": self._code_key, "kernel": own})  # fmt: skip
            kernels.append({**entry, "determinants": determinants,
                            "profiled_at": entry.get("profiled_at") or profiled_at})  # fmt: skip
        return {**section, "kernels": kernels}

    def prune(self, keep: int = MAX_ENTRIES) -> int:
        """Remove the least recently used entries beyond `keep`; how many went."""
        if not self.keep:
            return 0
        entries = sorted(self.root.glob("*/*.json"), key=lambda p: p.stat().st_mtime)
        gone = entries[: max(0, len(entries) - keep)]
        for path in gone:
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # other entries remain
                path.parent.rmdir()
        return len(gone)

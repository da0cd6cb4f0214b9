"""A workload's float64 reference kept by what determines it, so a commit that changed neither
pays nothing for it (a reference of a 4096³ matmul on the CPU takes ~25 s; issue 47).

What determines a reference: the code of the instance's `reference` method and of everything it
reaches by name (the class's other methods, the functions and constants of its module, the
functions of the suite's own modules it calls through them), without docstrings or line numbers;
the arrays and plain values the instance holds once prepared and poisoned (their checksums,
runner.worker.checksums, as the launch signature reads them); the workload's id and precision;
and the versions of the libraries a reference computes with. A key that cannot be had (an
instance that holds more than the signature reads, a `reference` that is no Python method) is
no key: the reference is computed, as it always was.

The entries live in the runner's build cache (`KERNELWATCH_BUILD_CACHE`/references), one `.npz`
per key, written whole or not at all, the least recently used removed beyond
KERNELWATCH_REFERENCE_CACHE_BYTES (8 GiB unless set). KERNELWATCH_REFERENCE_CACHE=0 turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from runner.worker.arrays import to_host
from runner.worker.checksums import kind

ENABLE_ENV = "KERNELWATCH_REFERENCE_CACHE"
BYTES_ENV = "KERNELWATCH_REFERENCE_CACHE_BYTES"
DEFAULT_BYTES = 8 << 30
MAX_DEPTH = 6  # names followed from `reference` before the walk gives up (no key)
LIBRARIES = ("numpy", "scipy", "torch", "cupy")


class NoKey(Exception):
    """What determines the reference cannot be said with certainty."""


def _code_parts(code: types.CodeType, doc: str | None = None) -> list[bytes]:
    """A code object's bytecode, constants and names, nested code included; `doc`: the
    function's docstring, which is left out (a reference is not its description)."""
    consts = list(code.co_consts)
    if doc is not None and consts and consts[0] == doc:
        consts = consts[1:]
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in consts:
        if isinstance(const, types.CodeType):
            parts.extend(_code_parts(const))
        else:
            parts.append(repr(const).encode())
    return parts


def _own(module_name: str, root: Path) -> bool:
    """Whether a module is the suite's own (its file under the worktree)."""
    path = getattr(sys.modules.get(module_name), "__file__", None)
    try:
        return path is not None and Path(path).resolve().is_relative_to(root)
    except OSError:
        return False


PLAIN = (bool, int, float, complex, str, bytes, type(None))
MAX_ITEMS = 256  # items of a list, tuple or dict the reference reads, followed one by one


def code_digest(method: Any, instance: Any, root: Path) -> str:
    """The digest of `method` and of what it reaches by name (module docstring): the names it
    reads of the instance's class, of the instance itself (`self.model`: an object of the
    suite's own classes is read as their code; a compiled module as the module it compiled)
    and of its module; or NoKey."""
    digest = hashlib.sha256()
    seen: set[int] = set()
    cls = type(instance)
    held = vars(instance) if hasattr(instance, "__dict__") else {}

    def walk(fn: Any, depth: int) -> None:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in seen:
            return
        if depth > MAX_DEPTH:
            raise NoKey("the reference reaches too deep")
        seen.add(id(code))
        for part in _code_parts(code, getattr(fn, "__doc__", None)):
            digest.update(part)
        names = _names(code)
        scopes = [vars(cls), held, getattr(fn, "__globals__", {})]
        for name in names:
            for scope in scopes:
                if name in scope:
                    follow(name, scope[name], depth, names, scope is held)
                    break

    def classes(kind: type, depth: int) -> None:
        """The code of a class of the suite's own and of its own bases."""
        for klass in kind.__mro__:
            if _own(klass.__module__, root):
                digest.update(f"class {klass.__qualname__}".encode())
                for item in vars(klass).values():
                    walk(item, depth + 1)

    def follow(name: str, value: Any, depth: int, names: list[str], own: bool = False) -> None:
        """`own`: the value is (inside) one of the instance's attributes, whose arrays are in
        the key by their checksums (runner.worker.launch_record.held)."""
        if depth > MAX_DEPTH:
            raise NoKey("the reference reaches too deep")
        if isinstance(value, PLAIN):
            digest.update(f"{name}={value!r}".encode())
        elif kind(value) is not None:  # an array: the instance's by checksum, a constant whole
            if not own and not isinstance(value, np.ndarray):
                raise NoKey(f"the reference reads {name!r}, an array the instance does not hold")
            digest.update(f"{name}:array".encode() if own else value.tobytes())
        elif isinstance(value, list | tuple | dict | set | frozenset):
            items = sorted(value.items(), key=lambda kv: repr(kv[0])) if isinstance(value, dict) \
                else list(enumerate(sorted(value, key=repr) if isinstance(value, set | frozenset)
                                    else value))  # fmt: skip
            if len(items) > MAX_ITEMS:
                raise NoKey(f"the reference reads {name!r}, of more than {MAX_ITEMS} items")
            digest.update(f"{name}:{type(value).__name__}[{len(items)}]".encode())
            for key, item in items:
                follow(f"{name}[{key!r}]", item, depth + 1, names, own)
        elif isinstance(value, types.ModuleType):
            digest.update(f"{name}:{value.__name__}".encode())
            if _own(value.__name__, root):  # what of it the code reads, by attribute name
                for attr in names:
                    if attr in vars(value):
                        follow(attr, vars(value)[attr], depth + 1, names)
        elif isinstance(value, type):
            if _own(value.__module__, root):
                classes(value, depth)
            else:
                digest.update(f"{name}:{value.__module__}.{value.__qualname__}".encode())
        elif isinstance(value, types.FunctionType | types.MethodType):
            if _own(value.__module__ or "", root):
                walk(value, depth + 1)
            else:  # a library's: its version is in the key
                digest.update(f"{name}:{value.__module__}.{value.__qualname__}".encode())
        elif _own(type(value).__module__, root):  # an object of the suite's own class
            classes(type(value), depth)
        elif getattr(value, "_orig_mod", None) is not None:  # torch.compile's wrapper
            digest.update(f"{name}:compiled".encode())
            follow(name, value._orig_mod, depth + 1, names, own)
        elif callable(value) and hasattr(value, "__qualname__"):  # a library's function
            digest.update(f"{name}:{value.__module__}.{value.__qualname__}".encode())
        else:  # a library's object: by what it says it is, if that is stable
            said = repr(value)
            if " at 0x" in said:
                raise NoKey(f"the reference reads {name!r}, a {type(value).__name__}")
            digest.update(f"{name}:{type(value).__module__}:{said}".encode())

    walk(method, 0)
    return digest.hexdigest()


def _names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_names(const))
    return sorted(set(names))


def versions() -> dict[str, str]:
    return {n: str(getattr(sys.modules[n], "__version__", "")) for n in LIBRARIES
            if n in sys.modules}  # fmt: skip


def reference_key(w: Any, instance: Any, root: Path) -> str:
    """The key of the reference of `instance` (prepared and poisoned), or NoKey."""
    from runner.worker.launch_record import Unavailable, held
    from runner.worker.pointers import fingerprints

    method = getattr(type(instance), "reference", None)
    if getattr(method, "__code__", None) is None:
        raise NoKey("its reference is no Python method")
    try:
        arrays, plain = held(instance)
    except Unavailable as exc:
        raise NoKey(str(exc)) from None
    prints = fingerprints(arrays)
    if any(p is None for p in prints.values()):
        raise NoKey("an array it holds has no checksum")
    key = {"workload": w.id, "precision": w.precision, "versions": versions(),
           "code": code_digest(method, instance, root), "arrays": prints,
           "values": plain}  # fmt: skip
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


class References:
    """The folder of kept references."""

    def __init__(self, folder: Path, limit: int = DEFAULT_BYTES) -> None:
        self.folder, self.limit = folder, limit

    @classmethod
    def from_env(cls) -> References | None:
        cache = os.environ.get("KERNELWATCH_BUILD_CACHE")
        if not cache or not enabled():
            return None
        try:
            limit = int(os.environ.get(BYTES_ENV, DEFAULT_BYTES))
        except ValueError:
            limit = DEFAULT_BYTES
        return cls(Path(cache) / "references", limit)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        path = self._path(key)
        try:
            with path.open("rb") as stored, np.load(stored, allow_pickle=False) as kept:
                found = {name: kept[name] for name in kept.files}
            path.touch()  # recently used
            return found
        except Exception:  # missing, truncated, not an .npz: computed again, never a failure
            return None

    def put(self, key: str, reference: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            with partial.open("wb") as out:
                np.savez(out, **{str(k): to_host(v) for k, v in reference.items()})
            partial.replace(path)
        except OSError:
            partial.unlink(missing_ok=True)
            return
        self._evict()

    def _evict(self) -> None:
        entries = []
        for p in self.folder.glob("*.npz"):
            try:
                entries.append((p.stat().st_mtime, p.stat().st_size, p))
            except OSError:
                continue
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries):
            if total <= self.limit:
                break
            p.unlink(missing_ok=True)
            total -= size

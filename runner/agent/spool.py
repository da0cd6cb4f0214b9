"""Result documents waiting for the service: one JSON file per run id, on disk before any post.

A document is written atomically (temporary file, fsync, os.replace, fsync of the folder) before
the first attempt to post it and deleted only once the service has accepted it, so a runner
killed at any moment loses nothing: the next start posts what is left, and a second post of the
same run id is a no-op on the service. Documents the service refuses as invalid go to
`rejected/` (with the reason beside them) for a person to look at; documents whose lease is gone
move to `superseded/` and get a line in `discarded.log`: never posted again, since the requeued
job measures again, but kept (every refused document stays on disk).
`flush` and `deliver` post spooled documents and settle their files; `Backoff` paces retries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import re
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.agent.client import ServiceClient, ServiceError, ServiceRefused

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$")
_STALE_TEMP_SECONDS = 3600.0


def default_spool_dir() -> Path:
    """`$XDG_CACHE_HOME/kernelwatch/spool`, i.e. `~/.cache/kernelwatch/spool` by default."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kernelwatch" / "spool"


def _file_stem(run_id: str) -> str:
    """The run id itself when it is a safe file name (UUIDs are), else a digest of it."""
    if _SAFE_NAME.match(run_id) and not run_id.endswith(".json"):
        return run_id
    return "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Pending:
    """One spooled document."""

    run_id: str
    path: Path

    def load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text(encoding="utf-8"))


class Spool:
    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_spool_dir()
        self.rejected_dir = self.directory / "rejected"
        self.superseded_dir = self.directory / "superseded"
        self.discarded_log = self.directory / "discarded.log"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._remove_stale_temporaries()

    def __repr__(self) -> str:
        return f"Spool({str(self.directory)!r})"

    def add(self, document: dict[str, Any]) -> Pending:
        """Put `document` on disk durably; the same run id again replaces the earlier file."""
        run_id = document.get("run_id")
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("a result document needs a run_id to be spooled")
        path = self._path(run_id)
        _write_atomically(path, json.dumps(document).encode())
        return Pending(run_id, path)

    def pending(self) -> list[Pending]:
        """Every spooled document, oldest first."""
        found = []
        for path in self.directory.glob("*.json"):
            try:
                found.append((path.stat().st_mtime_ns, path.name, path))
            except FileNotFoundError:  # posted meanwhile by another agent sharing the folder
                continue
        return [Pending(self._run_id_of(path), path) for _, _, path in sorted(found)]

    def __len__(self) -> int:
        return len(self.pending())

    def remove(self, run_id: str) -> None:
        """The service has the document: forget it."""
        with contextlib.suppress(FileNotFoundError):
            self._path(run_id).unlink()

    def reject(self, run_id: str, reason: str) -> Path | None:
        """Move the document to `rejected/`, with `<name>.reason.txt` saying why."""
        source = self._path(run_id)
        self.rejected_dir.mkdir(exist_ok=True)
        target = self.rejected_dir / source.name
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        note = f"{stamp} run {run_id}\n{reason}\n"
        _write_atomically(target.with_suffix(".reason.txt"), note.encode())
        try:
            os.replace(source, target)
        except FileNotFoundError:
            return None
        _fsync_dir(self.directory)
        return target

    def discard(self, run_id: str, reason: str) -> None:
        """Never post the document again: it moves to `superseded/`, with one line about it in
        `discarded.log`."""
        source = self._path(run_id)
        job_id = None
        with contextlib.suppress(OSError, ValueError, AttributeError):
            job_id = json.loads(source.read_text(encoding="utf-8")).get("job_id")
        line = {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": run_id,
            "job_id": job_id,
            "reason": reason,
        }
        with open(self.discarded_log, "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")
        self.superseded_dir.mkdir(exist_ok=True)
        try:
            os.replace(source, self.superseded_dir / source.name)
        except FileNotFoundError:
            return
        _fsync_dir(self.directory)

    def rejected(self) -> list[Path]:
        """The documents in `rejected/`."""
        if not self.rejected_dir.is_dir():
            return []
        return sorted(p for p in self.rejected_dir.glob("*.json"))

    def _path(self, run_id: str) -> Path:
        return self.directory / f"{_file_stem(run_id)}.json"

    def _run_id_of(self, path: Path) -> str:
        stem = path.stem
        if not stem.startswith("run-"):
            return stem
        # A digest name: the run id is inside the document.
        try:
            run_id = json.loads(path.read_text(encoding="utf-8")).get("run_id")
        except (OSError, ValueError, AttributeError):
            return stem
        return run_id if isinstance(run_id, str) and run_id else stem

    def _remove_stale_temporaries(self) -> None:
        # Left by a process killed while writing: the document was not complete, so it had not
        # been posted either. Young ones may belong to another agent sharing this folder.
        now = time.time()
        for path in self.directory.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > _STALE_TEMP_SECONDS:
                    path.unlink()


def _write_atomically(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable (POSIX); a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Backoff:
    """Exponential backoff with jitter: `initial` doubling up to `cap` seconds.

    Each delay is drawn uniformly from [d/2, d] ("equal jitter") so that many runners cut off
    by the same outage do not come back in lockstep.
    """

    def __init__(
        self,
        initial: float = 1.0,
        cap: float = 300.0,
        factor: float = 2.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1:
            raise ValueError("need 0 < initial <= cap and factor >= 1")
        self.initial, self.cap, self.factor = initial, cap, factor
        self.failures = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        """The wait before the next attempt, after one more failure."""
        ceiling = min(self.cap, self.initial * self.factor ** min(self.failures, 64))
        self.failures += 1
        return self._rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.failures = 0


def flush(
    spool: Spool, client: ServiceClient, log: logging.Logger, stop: threading.Event | None = None
) -> None:
    """Post every spooled document, oldest first; ServiceUnavailable ends the round early."""
    for entry in spool.pending():
        if stop is not None and stop.is_set():
            return
        try:
            document = entry.load()
        except FileNotFoundError:  # posted meanwhile by another agent sharing the folder
            continue
        except (OSError, ValueError) as exc:
            where = spool.reject(entry.run_id, f"unreadable spool file: {exc}")
            log.error("spooled run %s is unreadable, moved to %s", entry.run_id, where)
            continue
        deliver(client, spool, entry.run_id, document, log)


def deliver(
    client: ServiceClient,
    spool: Spool | None,
    run_id: str,
    document: dict[str, Any],
    log: logging.Logger,
) -> None:
    """Post one document and settle its spool file (if `spool`).

    Stored or already stored: removed. 409 (the lease is gone; the requeued job will measure
    again): moved to `superseded/` with a log line, the job left to its next attempt. 413/422, or
    a run id stored with other contents: moved to `rejected/` and the job reported failed. No
    4xx is posted again. ServiceUnavailable leaves the file for a later try;
    any other refusal (401, 404: the runner's token or URL, not the document) is raised.
    """
    job_id = document.get("job_id")
    try:
        answer = client.post_run(document)
    except ServiceRefused as exc:
        conflict = exc.status == 409 and "different contents" in exc.detail
        if exc.status == 409 and not conflict:
            if spool is not None:
                spool.discard(run_id, str(exc))
            log.warning(
                "run %s of job %s dropped (kept in superseded/): its lease is gone and another "
                "attempt will measure it again (%s)",
                run_id,
                job_id,
                exc,
            )
            return
        if exc.status not in (409, 413, 422):
            raise
        where = spool.reject(run_id, str(exc)) if spool is not None else None
        log.error("run %s of job %s refused, kept in %s: %s", run_id, job_id, where, exc)
        token = document.get("lease_token")
        if isinstance(job_id, int) and isinstance(token, str):
            with contextlib.suppress(ServiceError):
                client.fail(job_id, token, log_tail=f"result document refused: {exc}")
        return
    if spool is not None:
        spool.remove(run_id)
    log.info("run %s of job %s posted: %s", run_id, job_id, answer.get("detail"))

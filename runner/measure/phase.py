"""Run suite workloads in child processes: a hang is killed at its timeout, a crash is reported,
and the remaining workloads go on in a fresh process.

A worker process spends ~1.2 s on the H100 before its first workload (Python, NumPy, CuPy, the
CUDA context, the timers' buffers and kernel: an empty timing phase, .dev1.sh of 2026-11-26),
and a commit runs nine of them one after the other (three for correctness, six for timing).
`WarmWorkers` starts them ahead, while the build runs: each does all of that and waits for its
workload ids on stdin; `run_phase` hands a phase's ids to a waiting one where it has one. A
waiting worker has imported none of the suite's code (the build may still be writing what that
imports), only, for checking and timing, the frameworks it uses (runner.measure.preload), and
launches nothing: an idle context takes no GPU time from the one at work."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from runner.measure.preload import preload_for
from runner.suite.load import Suite


@dataclass
class Outcome:
    """What happened to one workload in one phase."""

    status: str  # ok | error | timeout | crashed
    result: dict[str, Any] | None = None
    error: str = ""


@dataclass
class Phase:
    mode: str  # list | check | time
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    listing: list[dict[str, Any]] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)
    stderr_tail: str = ""
    suite_error: str = ""  # the suite's module cannot give its workloads (runner.worker)
    # Seconds of its workers before their first workload and after their last one until the
    # process ended (starting: Python, imports, the CUDA context; closing: the interpreter's
    # exit), as the parent saw them (runner.measure.spent).
    starting: float = 0.0
    closing: float = 0.0
    # Of `closing`: what the worker said its exit handlers took (runner.worker.ending), and the
    # rest from its saying so to the process's end (the CUDA context, memory, the OS).
    exit_handlers: float = 0.0
    ended: float = 0.0


def _config(suite: Suite, mode: str, ids: list[str], seed: int) -> dict[str, Any]:
    return {
        "root": str(suite.root),
        "workloads": suite.workloads,
        "check": suite.check,
        "device": suite.device,
        "mode": mode,
        "ids": ids,
        "seed": seed,
        "timing": asdict(suite.timing),
    }


WARM_ENV = "KERNELWATCH_WARM_WORKERS"  # 0: every worker starts when its phase does


def warm_enabled() -> bool:
    return os.environ.get(WARM_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


PRELOADS = ("check", "time")  # the modes whose waiting workers import the suite's frameworks


class WarmWorkers:
    """Worker processes started ahead of their phases, each for one (mode, seed): imports done
    and (on a GPU) the CUDA context and, for timing, the timers up, waiting for their ids.
    `take` gives one that is still alive; `close` ends those never taken."""

    def __init__(
        self,
        suite: Suite,
        wanted: list[tuple[str, int]],
        env: dict[str, str] | None = None,
        *,
        context: bool = True,
    ) -> None:
        """`context=False`: the workers import the frameworks and wait with no CUDA context
        and nothing of the GPU's, which each makes once its ids come: for processes that must
        time as fresh ones do (runner.run.paired), while one before them is timing."""
        self.lock = threading.Lock()
        self.waiting: dict[tuple[str, int], list[tuple[subprocess.Popen, str]]] = {}
        self.warmed: set[int] = set()  # pids whose one line said they finished warming up
        # A process's first prepare paid for `import torch` (runner.measure.preload).
        self.preload = preload_for(suite.root) if any(m in PRELOADS for m, _ in wanted) else []
        for mode, seed in wanted:
            config = {**_config(suite, mode, [], seed), "wait": True, "context": context}
            if mode in PRELOADS and self.preload:
                config["preload"] = self.preload
            proc, path = _spawn(suite, config, env, stdin=subprocess.PIPE)
            self.waiting.setdefault((mode, seed), []).append((proc, path))

    def __enter__(self) -> WarmWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self, mode: str, seed: int) -> tuple[subprocess.Popen, str] | None:
        with self.lock:
            queue = self.waiting.get((mode, seed), [])
            while queue:
                proc, path = queue.pop(0)
                if proc.poll() is None:
                    return proc, path
                _reap(proc, path)  # died while waiting: a fresh worker does its work
        return None

    def ready(self, timeout: float) -> None:
        """Return once every worker still waiting has warmed up (or died, or `timeout` seconds
        passed): none is still importing beside a process about to be timed, as one started
        just before the timing would be on a host with few cores."""
        with self.lock:
            pending = {
                proc.stdout.fileno(): proc
                for queue in self.waiting.values()
                for proc, _ in queue
                if proc.stdout is not None and proc.pid not in self.warmed
            }
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            for fd in pending:
                selector.register(fd, selectors.EVENT_READ)
            while pending and (left := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(timeout=left):
                    proc = pending.pop(key.fd)
                    selector.unregister(key.fd)
                    # Its one line before its ids come; EOF: it died (its phase starts another)
                    os.read(key.fd, 65536)
                    with self.lock:
                        self.warmed.add(proc.pid)

    def close(self) -> None:
        with self.lock:
            for proc, path in (w for queue in self.waiting.values() for w in queue):
                assert proc.stdin is not None
                with contextlib.suppress(OSError):
                    proc.stdin.close()  # nothing to do: it exits
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                _reap(proc, path)
            self.waiting.clear()


def _spawn(
    suite: Suite, config: dict[str, Any], env: dict[str, str] | None, stdin: Any = None
) -> tuple[subprocess.Popen, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(suite.root), child_env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner.worker", f.name],
        cwd=suite.root,
        env=child_env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc, f.name


def _reap(proc: subprocess.Popen, path: str) -> None:
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    with contextlib.suppress(OSError):
        os.unlink(path)


def run_phase(
    suite: Suite,
    mode: str,
    ids: list[str],
    *,
    env: dict[str, str] | None = None,
    seed: int = 0,
    on_done: Callable[[str, Outcome], None] | None = None,
    processes: int = 1,
    weights: dict[str, float] | None = None,
    warm: WarmWorkers | None = None,
) -> Phase:
    """Run `mode` over `ids`, restarting the worker after each crash or timeout.

    With `processes` > 1 (never for timing: one process at a time owns the GPU), the ids are
    shared among that many concurrent workers, balanced by `weights` (e.g. bytes moved: the
    inputs to draw); a workload whose worker crashed or raised is run again afterwards, with no
    other worker running, so that the workers' contention (GPU memory, a compute mode that
    admits one process) never decides its outcome. The first worker of each is one of `warm`'s
    where it has one for this mode and seed; a worker started after a crash is a fresh one."""
    if processes > 1 and mode not in ("list", "time") and len(ids) > 1:
        return _run_parallel(suite, mode, ids, env, seed, on_done, processes, weights or {}, warm)
    phase = Phase(mode)
    remaining = list(ids)
    started = warm.take(mode, seed) if warm and ids else None
    while True:
        run_ids = remaining if mode != "list" else []
        done_before = len(phase.outcomes)
        tail = _one_worker(suite, mode, run_ids, env, seed, phase, on_done, started)
        started = None
        phase.stderr_tail = tail
        if mode == "list":
            if phase.suite_error:
                raise RuntimeError(phase.suite_error)
            if not phase.listing:
                raise RuntimeError(f"the suite's workloads module could not be listed:\n{tail}")
            return phase
        remaining = [i for i in remaining if i not in phase.outcomes]
        if remaining and len(phase.outcomes) == done_before:
            # A worker that dies between workloads would otherwise be restarted forever.
            why = phase.suite_error or f"worker died\n{tail}"
            for wid in remaining:
                phase.outcomes[wid] = Outcome("crashed", error=why)
            remaining = []
        if not remaining:
            return phase


def balance(ids: list[str], groups: int, weights: dict[str, float]) -> list[list[str]]:
    """`ids` in at most `groups` groups of similar total weight (heaviest first, each to the
    lightest group; ties to the first), each group in the original order."""
    loads = [0.0] * max(1, min(groups, len(ids)))
    members: list[list[int]] = [[] for _ in loads]
    order = sorted(range(len(ids)), key=lambda i: (-float(weights.get(ids[i], 0.0)), i))
    for i in order:
        g = loads.index(min(loads))
        loads[g] += float(weights.get(ids[i], 0.0)) + 1.0  # + 1: every workload costs something
        members[g].append(i)
    return [[ids[i] for i in sorted(m)] for m in members if m]


def _run_parallel(
    suite: Suite,
    mode: str,
    ids: list[str],
    env: dict[str, str] | None,
    seed: int,
    on_done: Callable[[str, Outcome], None] | None,
    processes: int,
    weights: dict[str, float],
    warm: WarmWorkers | None,
) -> Phase:
    lock = threading.Lock()
    again_statuses = ("crashed", "error")

    def done(wid: str, outcome: Outcome) -> None:
        if outcome.status not in again_statuses:  # those are decided by the run alone below
            with lock:
                _notify(on_done, wid, outcome)

    groups = balance(ids, processes, weights)
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        phases = list(
            pool.map(
                lambda group: run_phase(
                    suite, mode, group, env=env, seed=seed, on_done=done, warm=warm
                ),
                groups,
            )
        )
    phase = Phase(mode)
    merged = {wid: o for part in phases for wid, o in part.outcomes.items()}
    again = [wid for wid in ids if wid not in merged or merged[wid].status in again_statuses]
    if again:
        alone = run_phase(suite, mode, again, env=env, seed=seed, on_done=on_done)
        merged.update(alone.outcomes)
        phases.append(alone)
    phase.outcomes = {wid: merged[wid] for wid in ids if wid in merged}
    phase.stderr_tail = "\n".join(p.stderr_tail for p in phases if p.stderr_tail)[-4000:]
    # side by side, the slowest worker's: what the phase waited for
    phase.starting = max(p.starting for p in phases)
    slowest = max(phases, key=lambda p: p.closing)
    phase.closing, phase.exit_handlers, phase.ended = (
        slowest.closing, slowest.exit_handlers, slowest.ended)  # fmt: skip
    return phase


def _one_worker(
    suite: Suite,
    mode: str,
    ids: list[str],
    env: dict[str, str] | None,
    seed: int,
    phase: Phase,
    on_done: Callable[[str, Outcome], None] | None,
    started_worker: tuple[subprocess.Popen, str] | None = None,
) -> str:
    if started_worker is not None:  # waiting for its ids (WarmWorkers)
        proc, path = started_worker
        assert proc.stdin is not None
        try:
            proc.stdin.write((json.dumps({"ids": ids}) + "\n").encode())
            proc.stdin.close()
        except OSError:  # it died just now: what it wrote says why, as for any crash
            pass
    else:
        proc, path = _spawn(suite, _config(suite, mode, ids, seed), env)
    handed = time.monotonic()
    first: float | None = None
    last: float | None = None
    ending: float | None = None  # when it said its exit handlers had run
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    buffer, stderr = b"", bytearray()
    current: str | None = None
    started = time.monotonic()
    limit = suite.timing.timeout_seconds
    open_streams = 2
    try:
        while open_streams:
            if time.monotonic() - started > limit:
                proc.kill()
                what = current or "the suite's import"
                if current:
                    phase.outcomes[current] = Outcome(
                        "timeout", error=f"killed after {limit:g} s\n{_tail(stderr)}"
                    )
                    _notify(on_done, current, phase.outcomes[current])
                else:
                    phase.stderr_tail = f"{what} hung for {limit:g} s"
                    for wid in ids:
                        phase.outcomes.setdefault(wid, Outcome("timeout", error=_tail(stderr)))
                break
            for key, _ in selector.select(timeout=0.2):
                chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                if key.data == "err":
                    stderr.extend(chunk)
                    del stderr[:-65536]
                    continue
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if message["event"] == "start" and first is None:
                        first = time.monotonic()
                    current, started = _handle(message, phase, current, started, on_done)
                    if message["event"] in ("result", "error"):
                        last = time.monotonic()
                    elif message["event"] == "ending":
                        ending = time.monotonic()
                        phase.exit_handlers += float(message.get("exit_handlers") or 0.0)
    finally:
        selector.close()
        _reap(proc, path)
        if first is not None and last is not None:
            phase.starting += first - handed
            phase.closing += time.monotonic() - last
            if ending is not None:
                phase.ended += time.monotonic() - ending
    if current is not None and current not in phase.outcomes:
        code = proc.returncode
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        phase.outcomes[current] = Outcome("crashed", error=f"worker died ({how})\n{_tail(stderr)}")
        _notify(on_done, current, phase.outcomes[current])
    return _tail(stderr)


def _handle(
    message: dict[str, Any],
    phase: Phase,
    current: str | None,
    started: float,
    on_done: Callable[[str, Outcome], None] | None,
) -> tuple[str | None, float]:
    event = message["event"]
    if event == "list":
        phase.listing = message["workloads"]
        phase.device = message.get("device", {})
    elif event == "suite_error":
        phase.suite_error = message["error"]
    elif event == "start":
        return message["id"], time.monotonic()
    elif event in ("result", "error"):
        outcome = (
            Outcome("ok", result=message["result"])
            if event == "result"
            # "crashed": the workload left the worker's CUDA context dead (runner.worker)
            else Outcome(
                "crashed" if message.get("status") == "crashed" else "error",
                error=message["error"],
            )
        )
        phase.outcomes[message["id"]] = outcome
        _notify(on_done, message["id"], outcome)
        return None, time.monotonic()
    return current, started


def _notify(on_done: Callable[[str, Outcome], None] | None, wid: str, outcome: Outcome) -> None:
    if on_done is not None:
        on_done(wid, outcome)


def _tail(data: bytes | bytearray, limit: int = 4000) -> str:
    return bytes(data[-limit:]).decode("utf-8", "replace")

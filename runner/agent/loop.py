"""The runner agent: register, then claim, run and post jobs until stopped.

`Agent.run_forever()` registers (retrying while the service is unreachable), then loops: post
what waits in the spool, claim a job, run it in a worker thread while a lease thread extends its
lease, spool the result document and post it. A document is on disk before it is first posted
and leaves the spool only once the service has it (or refused it for good), so neither an outage
nor a kill loses a result. While the service is unreachable the agent waits with exponential
backoff and jitter, and claims nothing.

`stop()` (SIGTERM or SIGINT through `run_agent`): idle, the agent exits at once; during a job, the
job's stop event is set and `run_job` either finishes (the result is posted) or raises
`JobInterrupted` (the job is released back to the queue, the attempt uncounted). A second stop
releases the job at once without waiting for `run_job`. A `HostError` from `run_job` (the GPU
stack is gone) is the host's fault, not the job's: the job is released, never failed, the agent
reports the host unhealthy to the service (which gives the runner no job until it registers
again), stops claiming and exits with EXIT_HOST.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.agent.client import ServiceClient, ServiceError, ServiceRefused, ServiceUnavailable
from runner.agent.exits import EXIT_HOST, EXIT_OK, EXIT_REFUSED
from runner.agent.spool import Backoff, Spool, deliver, flush
from runner.host.checks import HostError
from runner.run.pipeline import JobInterrupted

logger = logging.getLogger(__name__)

RunJob = Callable[[dict[str, Any], threading.Event], dict[str, Any]]
LOG_TAIL_CHARS = 20_000


@dataclass
class _Job:
    job_id: int
    attempt_token: str
    claim: dict[str, Any]
    stop: threading.Event = field(default_factory=threading.Event)  # run_job should stop
    done: threading.Event = field(default_factory=threading.Event)  # run_job has returned
    wake: threading.Event = field(default_factory=threading.Event)  # done, or stop at once
    over: threading.Event = field(default_factory=threading.Event)  # the lease thread may end
    document: dict[str, Any] | None = None
    error: BaseException | None = None
    log_tail: str = ""
    lease_lost: str | None = None


class Agent:
    def __init__(
        self,
        client: ServiceClient,
        run_job: RunJob,
        *,
        spool: Spool,
        labels: dict[str, str],
        environment: dict[str, Any],
        host: str,
        poll_interval: float = 5.0,
        lease_interval: float = 60.0,
        log: logging.Logger = logger,
        backoff: Backoff | None = None,
    ) -> None:
        self.client, self.run_job, self.spool = client, run_job, spool
        self.labels, self.environment, self.host = labels, environment, host
        self.poll_interval, self.lease_interval = poll_interval, lease_interval
        self.log = log
        self._backoff = backoff or Backoff()
        # The spool has its own schedule: a document the service keeps failing on (5xx) must
        # not stop the runner from claiming, and an outage is caught by the claim anyway.
        self._flush_backoff = Backoff(self._backoff.initial, self._backoff.cap)
        self._next_flush = 0.0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._abort = threading.Event()
        self._job: _Job | None = None
        self.host_fault: str | None = None

    @property
    def current_job_id(self) -> int | None:
        job = self._job
        return job.job_id if job else None

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self, graceful: bool = True) -> None:
        """Stop: at once when idle; during a job, let it finish or release it (see module)."""
        with self._lock:
            immediate = not graceful or self._stopping.is_set()
            self._stopping.set()
            if immediate:
                self._abort.set()
            job = self._job
        if job is None:
            self.log.info("stopping")
            return
        job.stop.set()
        if immediate:
            self.log.warning("stopping now: handing job %s back unfinished", job.job_id)
            job.wake.set()
        else:
            self.log.info("stopping once job %s has finished or stopped", job.job_id)

    def run_forever(self) -> int:
        """Work until stopped; 0 when stopped, 1 when the service refuses this runner."""
        try:
            if not self._register():
                return EXIT_OK
            while not self._stopping.is_set():
                self._flush_if_due()
                if self._stopping.is_set():
                    break
                try:
                    claim = self.client.claim()
                except ServiceUnavailable as exc:
                    self._wait_after(exc)
                    continue
                self._backoff.reset()
                if claim is not None:
                    self._work(claim)
                else:
                    self._stopping.wait(self.poll_interval)
            return EXIT_HOST if self.host_fault else EXIT_OK
        except ServiceRefused as exc:
            self.log.error("the service refused this runner, stopping: %s", exc)
            return EXIT_REFUSED
        finally:
            with contextlib.suppress(OSError):
                if waiting := len(self.spool):
                    where = self.spool.directory
                    self.log.warning("%d result(s) wait in %s for the next start", waiting, where)
            self.log.info("agent stopped")

    # -- the loop's steps ------------------------------------------------------------------

    def _register(self) -> bool:
        while not self._stopping.is_set():
            try:
                runner = self.client.register(self.host, self.labels, self.environment)
            except ServiceUnavailable as exc:
                self._wait_after(exc)
                continue
            self._backoff.reset()
            url, name = getattr(self.client, "server_url", "?"), runner.get("name")
            claims_by = runner.get("claims_by", runner.get("labels")) or {}
            self.log.info(
                "registered with %s as runner %r, claims jobs by %s", url, name, claims_by
            )
            if untrusted := {k: v for k, v in self.labels.items() if claims_by.get(k) != v}:
                self.log.warning(
                    "labels this host reports but its token does not carry claim nothing: %s "
                    "(a host's labels narrow what its token may claim, never widen it; an admin "
                    "gives them: kernelwatch runner-token create %s --labels ... --rotate)",
                    untrusted,
                    name,
                )
            return True
        return False

    def _flush_if_due(self) -> None:
        """Post what waits in the spool: at start-up, between jobs, and on its backoff."""
        if time.monotonic() < self._next_flush:
            return
        try:
            flush(self.spool, self.client, self.log, self._stopping)
        except ServiceUnavailable as exc:
            self._postpone_flush(exc)
        else:
            self._flush_backoff.reset()

    def _postpone_flush(self, exc: ServiceUnavailable) -> None:
        delay = self._flush_backoff.next_delay()
        self._next_flush = time.monotonic() + delay
        self.log.warning("results wait in the spool: %s; next try in %.1f s", exc, delay)

    def _wait_after(self, exc: ServiceUnavailable) -> None:
        delay = self._backoff.next_delay()
        self.log.warning("%s; trying again in %.1f s", exc, delay)
        self._stopping.wait(delay)

    def _work(self, claim: dict[str, Any]) -> None:
        info = claim["job"]
        job = _Job(job_id=info["id"], attempt_token=claim["attempt_token"], claim=claim)
        where = f"{info.get('repository')} {info.get('branch')} at {info.get('commit')}"
        tries = f"attempt {info.get('attempt')} of {info.get('max_attempts')}"
        self.log.info("claimed job %s: %s (%s)", job.job_id, where, tries)
        with self._lock:
            stopping = self._stopping.is_set()
            self._job = None if stopping else job
        if stopping:
            self._release(job, "the agent was stopping when the claim came back")
            return
        name = f"job-{job.job_id}"
        lease = threading.Thread(target=self._keep_lease, args=(job,), name=f"{name}-lease")
        worker = threading.Thread(target=self._run_job, args=(job,), name=name, daemon=True)
        lease.daemon = True
        lease.start()
        worker.start()
        while not job.wake.wait(1.0):
            pass
        job.over.set()
        with self._lock:
            self._job = None
        if not job.done.is_set():  # stopped at once: run_job is left to wind down alone
            self._release(job, "stopped before the job finished")
        elif job.error is None and job.document is not None:
            self._post_result(job, job.document)
        elif isinstance(job.error, JobInterrupted) and job.lease_lost:
            self.log.warning("job %s stopped: its lease is gone (%s)", job.job_id, job.lease_lost)
        elif isinstance(job.error, JobInterrupted):
            self._release(job, "the job was interrupted")
        elif isinstance(job.error, HostError):
            # The host, not the job: hand it back for a healthy runner, say so, claim no more.
            self._release(job, f"this host cannot run jobs: {job.error}")
            self._report_unhealthy(str(job.error))
            self.log.error("stopping: %s", job.error)
            self.host_fault = str(job.error)
            self._stopping.set()
        else:
            self._fail(job)
        lease.join(timeout=1.0)

    def _run_job(self, job: _Job) -> None:
        try:
            document = self.run_job(job.claim, job.stop)
            if not isinstance(document, dict):
                raise TypeError(f"run_job returned {type(document).__name__}, not a document")
            job.document = document
        except BaseException as exc:  # reported to the service by the main thread
            job.error = exc
            tail, extra = traceback.format_exc(), getattr(exc, "log_tail", None)
            if isinstance(extra, str) and extra:  # e.g. the build log, carried by the error
                tail = f"{extra}\n{tail}"
            job.log_tail = tail[-LOG_TAIL_CHARS:]
        finally:
            job.done.set()
            job.wake.set()

    def _keep_lease(self, job: _Job) -> None:
        wait = self.lease_interval
        while not job.over.wait(wait):
            try:
                answer = self.client.extend_lease(job.job_id, job.attempt_token)
            except ServiceUnavailable as exc:
                if not job.over.is_set():
                    self.log.warning("could not extend the lease of job %s: %s", job.job_id, exc)
                wait = min(self.lease_interval, 5.0)
                continue
            except ServiceRefused as exc:
                if not job.over.is_set():
                    job.lease_lost = str(exc)
                    self.log.error("job %s was taken back, stopping it: %s", job.job_id, exc)
                    job.stop.set()
                return
            except Exception:  # a bug must not kill the thread silently
                self.log.exception("lease upkeep of job %s failed", job.job_id)
                return
            wait = self.lease_interval
            self.log.debug("job %s leased until %s", job.job_id, answer.get("lease_expires_at"))
            with contextlib.suppress(ServiceError):
                self.client.heartbeat()

    # -- outcomes --------------------------------------------------------------------------

    def _post_result(self, job: _Job, document: dict[str, Any]) -> None:
        if document.get("job_id") is None:
            document["job_id"] = job.job_id
        if not document.get("lease_token"):
            document["lease_token"] = job.attempt_token
        run_id = str(document.get("run_id"))
        try:
            self.spool.add(document)
            spooled = True
        except (OSError, ValueError) as exc:
            self.log.error("could not spool run %s of job %s (%s)", run_id, job.job_id, exc)
            spooled = False
        try:
            deliver(self.client, self.spool if spooled else None, run_id, document, self.log)
        except ServiceUnavailable as exc:
            if spooled:
                self._postpone_flush(exc)
            else:
                self.log.error("run %s of job %s is lost: %s", run_id, job.job_id, exc)

    def _report_unhealthy(self, reason: str) -> None:
        try:
            self.client.report_unhealthy(reason)
        except ServiceError as exc:  # the agent stops either way; the service may not know
            self.log.warning("could not tell the service this host is unhealthy: %s", exc)
        else:
            self.log.info("told the service this host cannot run jobs")

    def _fail(self, job: _Job) -> None:
        self.log.error("job %s failed; requeueing it:\n%s", job.job_id, job.log_tail)
        try:
            self.client.fail(job.job_id, job.attempt_token, log_tail=job.log_tail, retry=True)
        except ServiceError as exc:
            self.log.warning(
                "could not report job %s's failure (its lease will lapse): %s", job.job_id, exc
            )

    def _release(self, job: _Job, why: str) -> None:
        try:
            self.client.release(job.job_id, job.attempt_token)
        except ServiceError as exc:
            self.log.warning("could not release job %s (its lease will lapse): %s", job.job_id, exc)
            return
        self.log.info("released job %s back to the queue: %s", job.job_id, why)


@contextlib.contextmanager
def stop_on_signals(agent: Agent) -> Iterator[None]:
    """SIGTERM and SIGINT call `agent.stop()` (the second one stops at once); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        agent.log.info("received %s", signal.Signals(signum).name)
        agent.stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_agent(
    server: str,
    token: str,
    run_job: RunJob,
    *,
    spool_dir: Path | str | None = None,
    labels: dict[str, str] | None = None,
    environment: dict[str, Any] | None = None,
    host: str | None = None,
    poll_interval: float = 5.0,
    lease_interval: float = 60.0,
    timeout: float = 30.0,
) -> int:
    """Build the client, spool and agent, stop on SIGTERM/SIGINT, run; the exit code."""
    with ServiceClient(server, token, timeout=timeout) as client:
        agent = Agent(
            client,
            run_job,
            spool=Spool(spool_dir),
            labels=labels or {},
            environment=environment or {},
            host=host or socket.gethostname(),
            poll_interval=poll_interval,
            lease_interval=lease_interval,
        )
        with stop_on_signals(agent):
            return agent.run_forever()

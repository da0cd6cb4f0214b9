"""Work the service does beside its requests: the job reaper and the analysis worker, which
works off the backlog of stored runs (service.evaluation.backlog) and reports each run it judged
(service.runs.judged)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from anyio.to_thread import run_sync as run_in_threadpool
from sqlalchemy.orm import Session, sessionmaker

from service.core import telemetry
from service.core.settings import Settings
from service.evaluation.backlog import backlog_ages, process_pending
from service.models.base import utcnow
from service.runs import judged
from service.store.jobs.queue import reap
from service.store.verdicts.planner_statistics import analyse, stale_tables

log = logging.getLogger(__name__)

MAX_DEFER_SECONDS = 30.0  # a steady stream of runs is still analysed this often
STATISTICS_SECONDS = 60.0  # how often the planner's statistics are checked (PostgreSQL)


async def reap_forever(factory: sessionmaker[Session], interval: float) -> None:
    """Requeue jobs whose runner vanished; claims reap too, this covers idle queues."""
    while True:
        await asyncio.sleep(interval)
        try:
            await run_in_threadpool(_reap_once, factory)
        except Exception:
            log.exception("reaper failed; retrying in %.0f s", interval)


def _reap_once(factory: sessionmaker[Session]) -> None:
    with factory() as session, session.begin():
        expired = reap(session)
    telemetry.JOBS_EXPIRED.inc(expired)


class AnalysisWorker:
    """Works off the analysis backlog once stores have been quiet for `delay` seconds.

    A run stored by this process wakes it at once; `poll` covers runs that other processes
    stored and backlogs left by a restart."""

    def __init__(self, factory: sessionmaker[Session], settings: Settings) -> None:
        self.factory, self.settings = factory, settings
        self.delay, self.poll = settings.analysis_delay_seconds, settings.analysis_poll_seconds
        self._stored = asyncio.Event()
        self._statistics_checked = -STATISTICS_SECONDS

    def run_stored(self) -> None:
        self._stored.set()

    async def forever(self) -> None:
        while True:
            # First thing on start too: a database stored by other means (a restore, another
            # version) is planned for from the first request.
            await self._check_statistics()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stored.wait(), timeout=self.poll)
            self._stored.clear()
            try:
                if await self._backlog_quiet():
                    await run_in_threadpool(self.work_once)
            except Exception:
                log.exception("analysis backlog failed; retrying in %.0f s", self.poll)

    async def _check_statistics(self) -> None:
        if time.monotonic() - self._statistics_checked < STATISTICS_SECONDS:
            return
        self._statistics_checked = time.monotonic()
        try:
            await run_in_threadpool(self.refresh_statistics)
        except Exception:
            log.exception("refreshing the planner's statistics failed")

    def refresh_statistics(self) -> list[str]:
        """ANALYZE the tables autovacuum would now (service.store.verdicts.planner_statistics)."""
        engine = self.factory.kw["bind"]
        stale = stale_tables(engine)
        if stale:
            analyse(engine, stale)
            log.info("refreshed the planner's statistics of %s", ", ".join(stale))
        return stale

    def work_once(self) -> None:
        report = self._report if judged.wanted(self.settings) else None
        process_pending(self.factory, on_analysed=report)

    def _report(self, run_id: str) -> None:
        judged.report(self.factory, self.settings, run_id)

    async def _backlog_quiet(self) -> bool:
        """Wait until no process stored a run for `delay` seconds; False when nothing waits.

        Judged by the backlog's own times, so that the runs other service processes store,
        which this one hears nothing of, count as well: no process analyses mid-burst."""
        while True:
            newest, oldest = await run_in_threadpool(backlog_ages, self.factory)
            if newest is None or oldest is None:
                return False
            now = utcnow()
            quiet = (now - newest).total_seconds()
            if quiet >= self.delay or (now - oldest).total_seconds() >= MAX_DEFER_SECONDS:
                return True
            await asyncio.sleep(self.delay - quiet)

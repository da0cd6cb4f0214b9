"""A run's doubtful launches measured against its base within the run itself: the runner timed
them interleaved with the base commit's build (runner.run.paired) and sent the base's side as
the document's `paired_base`. Judged at once by the rule a confirmation job's samples pass
(service.analysis.confirmation) and kept as the run's confirmations (no job): the analysis
settles those series' doubtful verdicts with them and queues no job for them, where the base
they were timed against is the commit the verdict compares with
(service.evaluation.verdicts.confirmations)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis import confirmation as rule
from service.core.errors import InvalidDocument
from service.core.units import to_microseconds_factor
from service.models import Commit, Confirmation, Result, Run, Series
from service.models.base import utcnow
from service.schemas.document import RunDocument, WorkloadIn, params_key
from service.store.history.workload_rows import summarize_timings


def _processes(w: WorkloadIn) -> list[np.ndarray]:
    """A workload's timing samples in microseconds, process by process."""
    assert w.timing is not None
    factor = to_microseconds_factor(w.timing.unit)
    return [np.asarray(p.samples, dtype=np.float64) * factor for p in w.timing.processes]


def record_paired(session: Session, run_id: int, doc: RunDocument) -> int:
    """The run's confirmations from its `paired_base`, decided (Bonferroni across them); how
    many. A base workload the head did not time (or the other way round) confirms nothing."""
    base = doc.paired_base
    if base is None:
        return 0
    repository_id = session.scalar(select(Run.repository_id).where(Run.id == run_id))
    assert repository_id is not None
    try:
        summarize_timings(base, repository_id)  # the same limits as a stored run's numbers
    except InvalidDocument as exc:
        raise InvalidDocument(f"paired_base.{exc}") from exc
    heads = {
        (w.name, params_key(w.params), w.timing.kernel, w.timing.metric): w
        for w in doc.workloads
        if w.timing is not None
    }
    bases = {(w.name, params_key(w.params)): w for w in base.workloads if w.timing is not None}
    series = session.execute(
        select(Series.id, Series.workload, Series.params_key, Series.kernel, Series.metric)
        .join(Result, Result.series_id == Series.id)
        .where(Result.run_id == run_id)
    ).all()
    pairs = [
        (s.id, heads[key], bases[key[:2]])
        for s in series
        if (key := (s.workload, s.params_key, s.kernel, s.metric)) in heads and key[:2] in bases
    ]
    if not pairs:
        return 0
    base_commit = session.scalar(
        select(Commit.id).where(
            Commit.repository_id == repository_id, Commit.sha == base.commit.sha
        )
    )
    for series_id, head, before in pairs:
        measured = rule.remeasure(_processes(head), _processes(before), rule.ALPHA / len(pairs))
        session.add(
            Confirmation(
                run_id=run_id,
                series_id=series_id,
                base_commit_id=base_commit,
                job_id=None,
                state=measured.state,
                change=measured.change,
                p_value=measured.p_found,
                base_median=measured.base_median,
                head_median=measured.head_median,
                decided_at=utcnow(),
            )
        )
    session.flush()
    return len(pairs)

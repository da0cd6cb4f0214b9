"""Verdicts for every series of a freshly stored run."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.analysis.baseline import ancestry, baselines
from service.analysis.stats import unpack_samples
from service.analysis.verdicts import Candidate, compare_many, decide
from service.models import Commit, Result, Run, RunWorkload, Series, Verdict

BROKEN_STATES = ("correctness_failed", "failed", "timeout", "crashed")


def evaluate_run(session: Session, run: Run) -> list[Verdict]:
    head = session.get(Commit, run.commit_id)
    assert head is not None
    commit_ids = ancestry(session, head, run.branch)
    results = list(session.scalars(select(Result).where(Result.run_id == run.id)))
    history = baselines(session, [r.series_id for r in results], commit_ids)
    comparisons = []
    verdicts: list[Verdict] = []
    bases = [history.get(result.series_id, []) for result in results]
    candidates = [
        Candidate(
            result.id,
            unpack_samples(result.samples),
            [b.samples for b in base],
            baseline_medians=[b.median for b in base],
        )
        for result, base in zip(results, bases, strict=True)
    ]
    for comparison, base, result in zip(compare_many(candidates), bases, results, strict=True):
        if comparison is None:
            verdicts.append(
                Verdict(
                    run_id=run.id,
                    series_id=result.series_id,
                    result_id=result.id,
                    verdict="new",
                    baseline_results=len(base),
                    baseline_commits=[b.commit_id for b in base],
                    note="no baseline yet along this branch",
                )
            )
        else:
            comparisons.append((comparison, base, result))
    for decision, (comparison, base, result) in zip(
        decide([c for c, _, _ in comparisons]), comparisons, strict=True
    ):
        verdicts.append(
            Verdict(
                run_id=run.id,
                series_id=result.series_id,
                result_id=result.id,
                verdict=decision.verdict,
                change=comparison.change,
                p_value=comparison.p_value,
                q_value=decision.q_value,
                floor=comparison.floor,
                baseline_median=comparison.baseline_median,
                baseline_results=len(base),
                baseline_commits=[b.commit_id for b in base],
            )
        )
    verdicts += _broken_and_missing(session, run, commit_ids, {r.series_id for r in results})
    session.add_all(verdicts)
    return verdicts


def _broken_and_missing(
    session: Session, run: Run, commit_ids: list[int], measured: set[int]
) -> list[Verdict]:
    """Series the previous run of this suite measured that this run did not."""
    previous = _previous_run_id(session, run, commit_ids)
    if previous is None:
        return []
    before = session.execute(
        select(Series.id, Series.workload, Series.params_key)
        .join(Result, Result.series_id == Series.id)
        .where(Result.run_id == previous)
    ).all()
    states = {
        (w.name, w.params_key): w
        for w in session.scalars(select(RunWorkload).where(RunWorkload.run_id == run.id))
    }
    out = []
    for series_id, workload, params_key in before:
        if series_id in measured:
            continue
        state = states.get((workload, params_key))
        if run.status == "build_failed":
            verdict, note = "broken", "the build failed"
        elif state is not None and state.status in BROKEN_STATES:
            verdict, note = "broken", f"{state.status}: {state.error[:500]}"
        else:
            verdict, note = "missing", "measured by the previous run, not by this one"
        out.append(Verdict(run_id=run.id, series_id=series_id, verdict=verdict, note=note))
    return out


def _previous_run_id(session: Session, run: Run, commit_ids: list[int]) -> int | None:
    if not commit_ids:
        return None
    position = {cid: i for i, cid in enumerate(commit_ids)}
    # Ids only: the ancestry holds hundreds of runs and their environments are not needed.
    candidates = session.execute(
        select(Run.id, Run.commit_id).where(
            Run.commit_id.in_(commit_ids),
            Run.suite == run.suite,
            Run.fingerprint == run.fingerprint,
            Run.id != run.id,
            Run.status != "build_failed",
        )
    ).all()
    if not candidates:
        return None
    return min(candidates, key=lambda r: (position[r.commit_id], -r.id)).id

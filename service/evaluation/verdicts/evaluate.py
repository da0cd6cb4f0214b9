"""Verdicts for every series of a stored run (decided again when an earlier commit arrives late)."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.analysis.candidate import Candidate
from service.analysis.decision import decide
from service.analysis.segments import describe
from service.analysis.verdicts import compare_many
from service.analysis.wander import min_level
from service.core.sql import among
from service.evaluation.verdicts import confirmations, notes, redefinitions
from service.evaluation.verdicts.baseline import Baseline, baselines
from service.evaluation.verdicts.controls import controls
from service.evaluation.verdicts.measure_verdicts import judge_measures
from service.evaluation.verdicts.work_verdicts import judge_work
from service.models import Commit, Result, Run, RunWorkload, Series, Verdict
from service.store.history.ancestry import ancestry, next_results
from service.store.history.samples import unpack_samples

BROKEN_STATES = ("correctness_failed", "failed", "timeout", "crashed")


def evaluate_run(session: Session, run: Run) -> list[Verdict]:
    """The run's verdicts, replacing any it had (a run is analysed again when a commit of its
    ancestry arrives after it: service.evaluation.backlog)."""
    session.execute(delete(Verdict).where(Verdict.run_id == run.id))
    head = session.get(Commit, run.commit_id)
    assert head is not None
    commit_ids = baseline_line(session, run, head)
    results = list(session.scalars(select(Result).where(Result.run_id == run.id)))
    history = baselines(session, [r.series_id for r in results], commit_ids)
    line = _line_runs(session, run, commit_ids)
    previous = line[0] if line else None
    measured = {r.series_id for r in results}
    # A workload redefined in place: its new series' first result is judged against the level
    # of the series it retired (service.analysis.redefinition).
    started = {r.series_id for r in results if r.series_id not in history}
    redefined = redefinitions.redefined(session, run.id, previous, started, measured)
    if redefined:
        before = baselines(session, [s.id for s in redefined.values()], commit_ids)
        history |= {new: before[old.id] for new, old in redefined.items() if old.id in before}
    shas = _shas(session, history)
    bases = [history.get(result.series_id) for result in results]
    series = _series(session, results)
    # Series whose kernels nothing changed since their baseline measure the run's offset.
    unchanged = controls(
        session,
        run.id,
        {
            result.id: (
                series[result.series_id].workload,
                series[result.series_id].params_key,
                [b.run_id for b in base.results],
            )
            for result, base in zip(results, bases, strict=True)
            if base is not None and result.series_id not in redefined
        },
    )
    # A young level's verdict waits for the next run of its line, as does one that a sole
    # control's offset would flip (service.analysis.verdicts); a pull request's run has none:
    # its pending verdicts stay so until a new push.
    watched = [r.series_id for r, b in zip(results, bases, strict=True) if b is not None]
    later = next_results(session, head, run.branch, watched) if run.pull_request is None else {}
    candidates = [
        Candidate(
            result.id,
            unpack_samples(result.samples),
            [b.samples for b in base.results] if base else [],
            baseline_medians=[b.median for b in base.results] if base else None,
            noise_medians=base.segment_medians if base else None,
            head_counts=list(result.process_counts or []),
            baseline_counts=[b.process_counts for b in base.results] if base else [],
            next_median=later[result.series_id][1] if result.series_id in later else None,
            history=base.history if base else [],
            history_runs=base.history_runs if base else [],
            baseline_runs=[b.run_id for b in base.results] if base else [],
            control=result.id in unchanged,
            group=series[result.series_id].method,
            settled_at=min_level(base.segment.kind) if base else min_level("history"),
        )
        for result, base in zip(results, bases, strict=True)
    ]
    # A control named in a verdict's note: its workload and kernel (by result id).
    names = {r.id: f"{series[r.series_id].workload} {series[r.series_id].kernel}" for r in results}
    comparisons = []
    verdicts: list[Verdict] = []
    for comparison, base, result in zip(compare_many(candidates), bases, results, strict=True):
        if comparison is None:
            verdicts.append(
                Verdict(
                    run_id=run.id,
                    series_id=result.series_id,
                    result_id=result.id,
                    verdict="new",
                    baseline_results=len(base.results) if base else 0,
                    baseline_commits=[b.commit_id for b in base.results] if base else [],
                    note="no baseline yet along this branch",
                    **_segment_fields(base, shas),
                )
            )
        else:
            comparisons.append((comparison, base, result))
    _explain_method_changes(session, [v for v in verdicts if v.verdict == "new"], commit_ids)
    for decision, (_, base, result) in zip(
        decide([c for c, _, _ in comparisons]), comparisons, strict=True
    ):
        comparison = decision.comparison
        old = redefined.get(result.series_id)
        note = notes.verdict_note(
            decision,
            len(base.segment_medians),
            redefinitions.describe(old, series[result.series_id]) if old is not None else "",
            old.id if old is not None else None,
            sole_control=names.get(comparison.sole_control or -1, ""),
            same_kernels=result.id in unchanged,
        )
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
                baseline_results=len(base.results),
                baseline_commits=[b.commit_id for b in base.results],
                note=note,
                outlier=decision.settled == "back",
                run_offset=comparison.offset if comparison.controls else None,
                offset_controls=comparison.controls,
                redefined_from_series_id=old.id if old is not None else None,
                **_segment_fields(base, shas),
            )
        )
    # What an interleaved rerun found of a doubtful slowdown is its verdict.
    confirmations.settle(session, run, verdicts)
    then = {old.id: new_id for new_id, old in redefined.items()}
    verdicts += _broken_and_missing(session, run, previous, measured, then)
    session.add_all(verdicts)
    judge_work(session, run.id, line)
    judge_measures(session, run.id, line)
    return verdicts


def baseline_line(session: Session, run: Run, head: Commit) -> list[int]:
    """The commits a run's baseline is drawn from, nearest first: the head's ancestry along its
    branch; for a pull request's run, the merge base and its ancestry along the target branch
    (nothing until the merge base is known here: its verdicts wait for it as "new")."""
    if run.pull_request is None:
        return ancestry(session, head, run.branch)
    base = session.scalar(
        select(Commit).where(
            Commit.repository_id == run.repository_id, Commit.sha == run.merge_base_sha
        )
    )
    if base is None or run.base_ref is None:
        return []
    return [base.id, *(c for c in ancestry(session, base, run.base_ref) if c != base.id)]


def _series(session: Session, results: list[Result]) -> dict[int, Series]:
    wanted = list({r.series_id for r in results})
    if not wanted:
        return {}
    return {
        s.id: s for s in session.scalars(select(Series).where(among(session, Series.id, wanted)))
    }


def _shas(session: Session, history: dict[int, Baseline]) -> dict[int, str]:
    starts = {b.start_commit_id for b in history.values()}
    if not starts:
        return {}
    return dict(
        session.execute(
            select(Commit.id, Commit.sha).where(among(session, Commit.id, starts))
        ).all()
    )


def _segment_fields(base: Baseline | None, shas: dict[int, str]) -> dict[str, object]:
    if base is None:
        return {}
    return {
        "segment_start_commit_id": base.start_commit_id,
        "segment_kind": base.segment.kind,
        "segment_results": base.segment.length,
        "segment_note": describe(base.segment, shas[base.start_commit_id], base.segment.length),
    }


def _explain_method_changes(session: Session, new: list[Verdict], commit_ids: list[int]) -> None:
    """A series that is new because its workload is now timed another way says so: it starts
    afresh and is never compared with the series of the other method."""
    if not new or not commit_ids:
        return
    wanted = [v.series_id for v in new]
    series = {s.id: s for s in session.scalars(select(Series).where(Series.id.in_(wanted)))}
    for v in new:
        s = series[v.series_id]
        earlier = session.execute(
            select(Series.id, Series.method)
            .join(Result, Result.series_id == Series.id)
            .where(
                Series.repository_id == s.repository_id,
                Series.suite == s.suite,
                Series.workload == s.workload,
                Series.params_key == s.params_key,
                Series.kernel == s.kernel,
                Series.metric == s.metric,
                Series.fingerprint == s.fingerprint,
                Series.method != s.method,
                among(session, Result.commit_id, commit_ids),
            )
            .limit(1)
        ).first()
        if earlier is not None:
            v.note = (
                f"timing method changed from {earlier.method} to {s.method}: a new series "
                f"starts here (the {earlier.method} series is {earlier.id}); the two are "
                "never compared"
            )


def _broken_and_missing(
    session: Session, run: Run, previous: int | None, measured: set[int], redefined: dict[int, int]
) -> list[Verdict]:
    """Series the previous run of this suite measured that this run did not (`redefined`: those
    a series of this run took the place of, old id -> new id)."""
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
        elif series_id in redefined:
            verdict = "missing"
            note = f"redefined in place: measured as series {redefined[series_id]} from this run"
        else:
            verdict, note = "missing", "measured by the previous run, not by this one"
        out.append(Verdict(run_id=run.id, series_id=series_id, verdict=verdict, note=note))
    return out


def _line_runs(session: Session, run: Run, commit_ids: list[int]) -> list[int]:
    """The runs of the suite and fingerprint at the commits of the run's baseline line (one a
    commit, the newest where it was measured twice; builds that failed left out), nearest
    first: the previous run, and those whose captures teach the work counters' noise."""
    if not commit_ids:
        return []
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
    newest: dict[int, int] = {}
    for run_id, commit_id in candidates:
        newest[commit_id] = max(run_id, newest.get(commit_id, run_id))
    return [newest[cid] for cid in sorted(newest, key=position.__getitem__)]

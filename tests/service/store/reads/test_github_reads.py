"""What the GitHub integration reads to report a run (service.store.reads.github_reads), on
SQLite and PostgreSQL, over runs stored through the ingest and judged by the service's own
analysis: the newest run of a commit and suite on each environment (by when it finished); the
runs' verdicts with their series; their workloads in the states asked for; the work counters
that grew and the measures that regressed, the most first; and a pull request's run with its
pull request, none for a branch's run."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.analysis.work import WORK_COUNTERS
from service.models import PullRequest, Run
from service.store.reads import github_reads as reads
from tests.documents import document, sha_for
from tests.service.store.conftest import Store

INSTRUCTIONS, SECTORS = list(WORK_COUNTERS)[:2]


def finished(doc: dict[str, Any], hour: int, fingerprint: str, suite: str = "kernels") -> dict:
    doc["finished_at"] = f"2026-11-21T{hour:02d}:00:00+00:00"
    doc["environment"]["fingerprint"], doc["suite"] = fingerprint, suite
    return doc


def test_the_newest_run_of_a_commit_and_suite_on_each_environment(
    factory: sessionmaker[Session], store: Store
) -> None:
    later = store(finished(document(commit="c0"), 3, "a" * 16))
    earlier = store(finished(document(commit="c0"), 2, "a" * 16))  # stored after, finished before
    other_gpu = store(finished(document(commit="c0"), 1, "b" * 16))
    store(finished(document(commit="c0"), 5, "a" * 16, suite="torch"))
    store(finished(document(commit="c1"), 6, "a" * 16))
    with factory() as session:
        newest = reads.newest_per_environment(session, session.get(Run, earlier))
        assert {(r.fingerprint, r.id) for r in newest} == {("a" * 16, later), ("b" * 16, other_gpu)}
        assert reads.commit_of(session, newest[0]).sha == sha_for("c0")


def test_a_runs_verdicts_come_with_their_series_and_its_broken_workloads_by_state(
    factory: sessionmaker[Session], store: Store
) -> None:
    doc = document(commit="c0", medians={"a": 100.0, "b": 50.0, "c": 20.0})
    doc["workloads"][1].update(status="timeout", timing=None, error="took over 60 s")
    doc["workloads"][2].update(status="crashed", timing=None, correctness=None)
    run_id = store(doc, analyse=True)
    with factory() as session:
        judged = reads.verdicts_with_series(session, [run_id])
        broken = reads.workloads_in(session, [run_id], ["timeout", "failed"])
        assert reads.verdicts_with_series(session, []) == []
    assert [(v.verdict, s.kernel) for v, s in judged] == [("new", "a")]
    assert [(w.params["act"], w.error) for w in broken] == [("b", "took over 60 s")]


def with_work_and_measures(
    doc: dict[str, Any], instructions: list[float], peaks: list[float]
) -> dict[str, Any]:
    """Each workload's instructions (ncu) and peak memory, in the order of its workloads."""
    for workload, count, peak in zip(doc["workloads"], instructions, peaks, strict=True):
        counters = {INSTRUCTIONS: (count, "inst"), SECTORS: (65_536.0, "sector")}
        workload["ncu"] = {"status": "ok", "kernels": [{
            "kernel": workload["kernels"][0], "findings": [],
            "metrics": {name: {"value": v, "unit": u} for name, (v, u) in counters.items()},
        }]}  # fmt: skip
        for process in workload["timing"]["processes"]:
            process["peak_memory_bytes"] = int(peak)
    return doc


def test_the_work_that_grew_and_the_measures_that_regressed_the_most_first(
    factory: sessionmaker[Session], store: Store
) -> None:
    line: list[str] = []
    for i in range(4):
        doc = document(commit=f"c{i}", parents=line[-1:], ancestors=line[::-1], minutes=i,
                       seed=i, medians={"k": 5.0, "m": 8.0})  # fmt: skip
        store(with_work_and_measures(doc, [1e6, 1e6], [1e9, 1e9]), analyse=True)
        line.append(f"c{i}")
    head = document(commit="head", parents=line[-1:], ancestors=line[::-1], minutes=9, seed=9,
                    medians={"k": 5.0, "m": 8.0})  # fmt: skip
    # k does 3.1% more work, m 3.1% less (a change, but not one that grew).
    with_work_and_measures(head, [1_031_000, 969_000], [1.6e9, 3.0e9])
    run_id = store(head, analyse=True)
    with factory() as session:
        grown = reads.grown_work(session, [run_id])
        regressed = reads.regressed_measures(session, [run_id])
    assert {(v.counter, w.params["act"]) for v, w in grown} == {(INSTRUCTIONS, "k")}
    assert grown[0][0].change == pytest.approx(0.031)
    assert [(v.measure, w.params["act"]) for v, w in regressed] == [
        ("peak_memory_bytes", "m"),  # 3x
        ("peak_memory_bytes", "k"),  # +60%
    ]


def test_a_pull_requests_run_comes_with_its_pull_request(
    factory: sessionmaker[Session], store: Store
) -> None:
    store(document(commit="c0", run_id="branch-run"))
    doc = document(commit="head", branch="pull/7", run_id="pull-run")
    doc["pull_request"] = {"number": 7, "base_ref": "main", "merge_base": sha_for("c0")}
    store(doc)
    with factory() as session:
        # Its pull request not heard of yet (no event): nothing to comment on.
        assert reads.pull_request_run(session, "pull-run") is None
    with factory() as session, session.begin():
        repository_id = session.scalars(select(Run.repository_id)).first()
        session.add(PullRequest(repository_id=repository_id, number=7, state="open",
                                head_sha=sha_for("head"), base_ref="main"))  # fmt: skip
    with factory() as session, session.begin():
        found = reads.pull_request_run(session, "pull-run")
        assert found is not None
        run, repository, pull, commit = found
        assert (run.run_uuid, repository, pull.number, commit.sha) == (
            "pull-run",
            "acme/kernels",
            7,
            sha_for("head"),
        )
        assert reads.pull_request_run(session, "branch-run") is None
        reads.set_comment_id(session, pull.id, 4_000_000_000)  # GitHub's ids pass 32 bits
        reads.set_comment_id(session, pull.id + 1, 1)  # no such pull request: nothing to do
    with factory() as session:
        assert session.scalars(select(PullRequest.comment_id)).one() == 4_000_000_000

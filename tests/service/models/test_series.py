"""service/models/series.py on the migrated database: a measure's series carry the method
"measure"; a series' identity (the SHA-256 of what it is never compared across) is its one unique
key; a result keeps its raw samples byte for byte (little-endian float64, every process's
concatenated, split by process_counts) and its commit time aware; results go with their run,
their run's workload and their series."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.models import Repository, Result, Run, RunWorkload, Series
from service.models.series import MEASURE_METHOD
from tests.service.models.conftest import T0, added, count, series_row


def result_row(run: Run, workload: RunWorkload, series: Series, samples: bytes) -> Result:
    return Result(run_id=run.id, run_workload_id=workload.id, series_id=series.id,
                  commit_id=run.commit_id, branch="main", committed_at=T0, n=3, median=2.25,
                  q1=1.5, q3=3.0, min=1.5, max=3.0, mean=2.25, stdev=0.75, samples=samples,
                  method="cuda_events")  # fmt: skip


def test_a_measures_series_has_the_method_measure() -> None:
    assert MEASURE_METHOD == "measure"


def test_a_second_series_of_the_same_identity_is_refused(
    session: Session, repo: Repository, series: Series
) -> None:
    twin = series_row(repo, series.identity)
    twin.metric = "other"  # the identity alone is the key, whatever the other columns say
    with pytest.raises(IntegrityError):
        added(session, twin)
    session.rollback()


def test_raw_samples_read_back_byte_for_byte(
    session: Session, run: Run, workload: RunWorkload, series: Series
) -> None:
    # Two processes: 2 samples and 1, little-endian float64 whatever the host's order.
    samples = np.array([1.5, 3.0, 2.25], dtype="<f8").tobytes()
    row = added(session, result_row(run, workload, series, samples))
    row.process_counts = [2, 1]
    session.commit()
    session.expire_all()
    read = session.get(Result, row.id)
    assert read.samples == samples and read.process_counts == [2, 1]
    assert np.frombuffer(read.samples, dtype="<f8").tolist() == [1.5, 3.0, 2.25]
    assert read.committed_at == T0


def test_a_result_without_process_counts_has_none(
    session: Session, run: Run, workload: RunWorkload, series: Series
) -> None:
    assert added(session, result_row(run, workload, series, b"")).process_counts == []


@pytest.mark.parametrize("parent", ["run", "workload", "series"])
def test_results_go_with_their_run_workload_and_series(
    session: Session,
    run: Run,
    workload: RunWorkload,
    series: Series,
    parent: str,
) -> None:
    added(session, result_row(run, workload, series, b""))
    session.delete({"run": run, "workload": workload, "series": series}[parent])
    session.flush()
    assert count(session, Result) == 0

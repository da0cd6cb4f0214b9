"""An import's target as service/schemas/imports.py checks it for the API's query and the CLI's
flags alike: one of the two formats, a repository and branch by the names' rules, a full sha
(stored in lower case), a commit time with its offset (kept in UTC), and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

import pytest
from pydantic import ValidationError

from service.schemas.imports import ImportCreate, ImportFormat

SHA = "0123456789abcdef0123456789ABCDEF01234567"


def fields_refused(**given: object) -> list[tuple]:
    with pytest.raises(ValidationError) as refused:
        ImportCreate(**{"format": "gbench", "repository": "acme/kernels", "commit": SHA, **given})
    return [e["loc"] for e in refused.value.errors()]


def test_the_formats_are_google_benchmark_and_nvbench() -> None:
    assert set(get_args(ImportFormat)) == {"gbench", "nvbench"}


def test_a_minimal_import_is_on_main_without_a_commit_time() -> None:
    target = ImportCreate(format="nvbench", repository="acme/kernels", commit=SHA)
    assert target.commit == SHA.lower()
    assert (target.branch, target.committed_at) == ("main", None)


def test_the_commit_time_is_kept_in_utc() -> None:
    target = ImportCreate(
        format="gbench", repository="acme", commit=SHA, committed_at="2026-03-01T09:30:00+02:00"
    )
    assert target.committed_at == datetime(2026, 3, 1, 7, 30, tzinfo=UTC)
    assert target.committed_at.utcoffset().total_seconds() == 0


def test_a_commit_time_without_an_offset_is_refused() -> None:
    # A naive time would be read in whatever zone the server runs in.
    assert fields_refused(committed_at="2026-03-01T09:30:00") == [("committed_at",)]


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"format": "csv"}, "format"),
        ({"commit": SHA[:12]}, "commit"),  # a short sha names no commit for sure
        ({"commit": "g" * 40}, "commit"),
        ({"repository": "acme/../etc"}, "repository"),
        ({"branch": "feature..x"}, "branch"),
        ({"suite": "default"}, "suite"),  # nothing beyond the fields above
    ],
)
def test_what_no_import_can_target_is_refused_by_field(given: dict, field: str) -> None:
    assert fields_refused(**given) == [(field,)]

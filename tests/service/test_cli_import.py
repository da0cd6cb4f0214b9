"""`kernelwatch import` (service.cli_import) in this process on SQLite and PostgreSQL: nvbench's
sample files found beside its JSON, a file imported once, and files refused before or by the
database with nothing stored."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from service import cli
from service.cli_import import MAX_FILE_BYTES, sample_files
from service.core.settings import Settings
from service.models import Commit, Repository, Result, Run, Series

RUNS = Path(__file__).parent / "runs" / "fixtures"
NVBENCH = RUNS / "nvbench"
GBENCH_CONTEXT = json.loads((RUNS / "gbench" / "saxpy_base.json").read_text())["context"]
REPO = "acme/kernels"
BASE, HEAD = "a" * 40, "b" * 40
Kernelwatch = Callable[..., tuple[int, str, str]]


@pytest.fixture
def kernelwatch(
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Kernelwatch:
    """`kernelwatch import ARGS...` on the test's database: (exit code, out, err)."""
    for name in os.environ:
        if name.startswith("KERNELWATCH_") and name != "KERNELWATCH_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("KERNELWATCH_DATABASE_URL", settings.effective_database_url)
    monkeypatch.setenv("KERNELWATCH_DATA_DIR", str(settings.data_dir))
    # The first place a sample file is looked for is the working folder: an empty one.
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")

    def run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["import", *argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def stored(engine: Engine) -> list[int]:
    """Repositories, commits, runs and results in the database."""
    with Session(engine) as session:
        return [session.scalar(select(func.count()).select_from(m)) or 0
                for m in (Repository, Commit, Run, Result)]  # fmt: skip


def results(engine: Engine, commit: str) -> dict[tuple[str, int], int]:
    """(T, Elements) -> samples stored, of the results at `commit`."""
    with Session(engine) as session:
        rows = session.execute(
            select(Series.params, Result.n)
            .join(Result, Result.series_id == Series.id)
            .join(Run, Run.id == Result.run_id)
            .join(Commit, Commit.id == Run.commit_id)
            .where(Commit.sha == commit)
        ).all()
    return {(p["T"], p["Elements"]): n for p, n in rows}


def gbench(path: Path, *times_ns: float) -> Path:
    """A Google Benchmark file of one benchmark's repetitions at these times."""
    benchmarks = [
        {"name": "BM_a", "run_name": "BM_a", "run_type": "iteration", "repetitions": len(times_ns),
         "repetition_index": i, "threads": 1, "iterations": 10, "real_time": t, "cpu_time": t,
         "time_unit": "ns"}
        for i, t in enumerate(times_ns)
    ]  # fmt: skip
    path.write_text(json.dumps({"context": GBENCH_CONTEXT, "benchmarks": benchmarks}))
    return path


def test_sample_files_are_found_as_named_or_beside_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = NVBENCH / "copy.json"
    # The fixture's JSON names six files beside it; only the first state's times were kept.
    assert sample_files(source, source.read_bytes()) == {
        "copy.json-bin/0.bin": (NVBENCH / "copy.json-bin" / "0.bin").read_bytes()
    }
    # nvbench names them relative to the folder it ran in: looked for under the JSON's folder,
    # then by the file's own name beside the JSON; a name found nowhere is left out.
    flat = tmp_path / "flat"
    (flat / "sub").mkdir(parents=True)
    (flat / "sub" / "1.bin").write_bytes(b"nested")
    (flat / "1.bin").write_bytes(b"flat 1")
    (flat / "2.bin").write_bytes(b"flat 2")
    elsewhere = tmp_path / "elsewhere.bin"
    elsewhere.write_bytes(b"abs")
    named = [
        "sub/1.bin",
        "results/run.json-bin/2.bin",
        "results/run.json-bin/3.bin",
        str(elsewhere),
    ]
    # At any depth of the JSON; a "value" not under the name "filename" is no file.
    data = json.dumps(
        {
            "a": [{"b": {"name": "filename", "value": n}} for n in named]
            + [{"name": "other", "value": "1.bin"}, {"name": "filename", "value": 7}]
        }
    )
    assert sample_files(flat / "run.json", data.encode()) == {
        "sub/1.bin": b"nested",
        "results/run.json-bin/2.bin": b"flat 2",
        str(elsewhere): b"abs",
    }


@pytest.mark.parametrize("data", [b"{not json", b"[" * 100_000, b"\xff\xfe"])
def test_sample_files_of_a_file_that_is_no_json_are_none(tmp_path: Path, data: bytes) -> None:
    """The reader, not this, says what is wrong with the file."""
    assert sample_files(tmp_path / "x.json", data) == {}


def test_an_nvbench_file_is_imported_with_its_sample_files_once(
    kernelwatch: Kernelwatch, engine: Engine, tmp_path: Path
) -> None:
    shutil.copytree(NVBENCH, tmp_path / "results")
    path = tmp_path / "results" / "copy.json"
    code, out, err = kernelwatch("--format", "nvbench", "--repo", REPO, "--commit", BASE,
                                 "--committed-at", "2026-11-01T10:00:00Z", str(path))  # fmt: skip
    assert (code, err) == (0, "")
    with Session(engine) as session:
        run = session.scalars(select(Run)).one()
        commit = session.get(Commit, run.commit_id)
        assert commit is not None
        assert (commit.sha, run.branch) == (BASE, "main")
        when = commit.committed_at  # naive on SQLite: stored as UTC
        assert (when if when.tzinfo else when.replace(tzinfo=UTC)) == datetime(
            2026, 11, 1, 10, tzinfo=UTC
        )
    assert (
        out == f"imported 3 results of copy.json as run {run.run_uuid} ({REPO}@main aaaaaaaaaaaa)\n"
    )
    assert run.run_uuid.startswith("import-nvbench-")
    # The first state's 200 times come from its sample file; the others from their summaries.
    assert results(engine, BASE) == {("F32", 65536): 200, ("F32", 16777216): 1, ("F64", 65536): 1}
    assert stored(engine) == [1, 1, 1, 3]
    code, out, _ = kernelwatch("--format", "nvbench", "--repo", REPO, "--commit", BASE, str(path))
    assert (code, out) == (
        0,
        f"copy.json was imported already as run {run.run_uuid}; nothing changed\n",
    )
    assert stored(engine) == [1, 1, 1, 3]
    # Without its sample folder the same file still imports, each state from its summary.
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(path, lone / "copy.json")
    code, out, _ = kernelwatch("--format", "nvbench", "--repo", REPO, "--commit", HEAD,
                               "--branch", "dev", str(lone / "copy.json"))  # fmt: skip
    assert code == 0 and out.startswith("imported 3 results of copy.json as run import-nvbench-")
    assert out.endswith(f" ({REPO}@dev bbbbbbbbbbbb)\n")
    assert results(engine, HEAD)[("F32", 65536)] == 1
    assert stored(engine) == [1, 2, 2, 6]


def test_the_same_file_for_another_branch_is_another_run(
    kernelwatch: Kernelwatch, engine: Engine, tmp_path: Path
) -> None:
    path = gbench(tmp_path / "bench.json", 2.0, 3.0)
    runs = []
    for branch in ("main", "release", "main"):
        code, out, _ = kernelwatch("--format", "gbench", "--repo", REPO, "--commit", BASE,
                                   "--branch", branch, str(path))  # fmt: skip
        assert code == 0
        runs.append(out.split(" as run ")[1].split(" ")[0].rstrip(";"))
    assert runs[0] == runs[2] != runs[1]
    assert stored(engine) == [1, 1, 2, 2]


def test_a_file_over_the_size_limit_is_refused_unread(
    kernelwatch: Kernelwatch, engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: its size without its bytes
    assert kernelwatch("--format", "gbench", "--repo", REPO, "--commit", BASE, str(path)) == (
        1, "", f"kernelwatch: {path}: larger than 256 MiB\n"
    )  # fmt: skip
    assert stored(engine) == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("times", "said"),
    [
        ((), "cannot import as gbench: the file holds no benchmarks"),
        # Read as a time, refused by the database's side: no microseconds are that small.
        ((2.0, 5e-324), "workloads[0].timing.processes: a sample in ns underflows to zero in "
                        "microseconds"),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_stored_changes_nothing(
    kernelwatch: Kernelwatch, engine: Engine, tmp_path: Path, times: tuple[float, ...], said: str
) -> None:
    path = gbench(tmp_path / "bench.json", *times)
    code, out, err = kernelwatch("--format", "gbench", "--repo", REPO, "--commit", BASE, str(path))
    assert (code, out, err) == (1, "", f"kernelwatch: {path}: {said}\n")
    assert stored(engine) == [0, 0, 0, 0]


def test_help_names_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["import", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "gbench: Google Benchmark JSON (--benchmark_format=json);" in text
    assert "nvbench: nvbench JSON (--json; --jsonbin sample files read from beside it)" in text

"""service.runs.imports.gbench on real Google Benchmark output (fixtures/gbench, its README)
and on files broken in each way a reader must refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.runs.imports import ImportFileError
from service.runs.imports.gbench import parse, split_name

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gbench"


def real(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def by_kernel(name: str) -> dict[str, Any]:
    return {s.kernel: s for s in parse(real(name)).series}


def test_repetitions_are_the_samples_in_the_files_unit() -> None:
    series = by_kernel("saxpy_base.json")
    saxpy = series["BM_saxpy/4096"]
    raw = json.loads(real("saxpy_base.json"))["benchmarks"]
    expected = [b["real_time"] for b in raw
                if b["run_name"] == "BM_saxpy/4096" and b["run_type"] == "iteration"]  # fmt: skip
    assert saxpy.samples == expected and len(expected) == 10
    assert (saxpy.name, saxpy.params, saxpy.unit) == ("BM_saxpy", {"arg0": 4096}, "ns")
    assert saxpy.status == "ok" and "10 repetition" in saxpy.note


def test_names_with_templates_named_arguments_and_threads() -> None:
    series = by_kernel("saxpy_base.json")
    threaded = series["BM_sum<double>/size:65536/threads:2"]
    assert threaded.name == "BM_sum_double_"
    assert threaded.params == {"size": 65536, "threads": 2}
    assert split_name("BM_copy/8/real_time") == ("BM_copy", {"arg0": 8, "real_time": True})


def test_errors_fail_and_skips_skip_their_series() -> None:
    series = by_kernel("saxpy_base.json")
    assert series["BM_fails"].status == "failed"
    assert series["BM_fails"].error == "the device buffer could not be allocated"
    skipped = series["BM_not_here"]
    assert skipped.status == "skipped" and skipped.error == "needs a GPU"
    assert series["BM_fails"].samples == [] == series["BM_not_here"].samples


def test_aggregates_only_give_the_median_as_one_sample() -> None:
    raw = json.loads(real("saxpy_aggregates_only.json"))["benchmarks"]
    median = next(b["real_time"] for b in raw if b["name"] == "BM_saxpy/4096_median")
    saxpy = by_kernel("saxpy_aggregates_only.json")["BM_saxpy/4096"]
    assert saxpy.samples == [median]
    assert "median of 5 repetitions" in saxpy.note


def test_the_host_from_the_context() -> None:
    imported = parse(real("saxpy_base.json"))
    assert imported.suite == "gbench:bench_saxpy" and imported.tool == "gbench"
    env = imported.environment
    assert env["gpu"]["name"] == "CPU: 2 CPUs at 2596 MHz" and env["gpu"]["sm_count"] == 2
    assert env["host"]["hostname"] == "vm" and env["gbench"]["library_version"] == "v1.9.5"
    assert imported.started_at is not None and imported.started_at.utcoffset() is not None
    # the same host in another file is the same environment
    assert parse(real("saxpy_slower.json")).environment["fingerprint"] == env["fingerprint"]


def broken(change) -> bytes:
    doc = json.loads(real("saxpy_base.json"))
    change(doc)
    return json.dumps(doc).encode()


def _set(path: list[Any], value: Any):
    def change(doc: Any) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not json", "not Google Benchmark JSON output"),
        (b"[]", "no 'context' object"),
        (broken(lambda d: d.pop("benchmarks")), "no 'benchmarks' list"),
        (broken(_set(["benchmarks"], [])), "holds no benchmarks"),
        (broken(_set(["benchmarks", 0], 7)), "benchmarks[0] is not an object"),
        (broken(_set(["benchmarks", 0, "run_name"], "")), "benchmarks[0] has no run_name"),
        (broken(_set(["benchmarks", 0, "real_time"], "fast")), "benchmarks[0]: real_time"),
        (broken(_set(["benchmarks", 0, "real_time"], -1.0)), "is not a positive time"),
        (broken(_set(["benchmarks", 0, "time_unit"], "fortnight")), "time_unit 'fortnight'"),
        (broken(_set(["benchmarks", 0, "run_type"], "warmup")), "run_type 'warmup'"),
        (broken(_set(["benchmarks", 0, "real_time"], 1e9)), "the file was altered or truncated"),
        (broken(_set(["context", "num_cpus"], 0)), "context.num_cpus"),
        (broken(_set(["context", "date"], "yesterday")), "context.date"),
        (b'{"context": {}, "benchmarks": [{"name": "a", "run_name": "a", "real_time": NaN, '
         b'"time_unit": "ns"}]}', "benchmarks[0]: real_time nan"),
    ],
)  # fmt: skip
def test_a_broken_file_is_refused_saying_what_and_where(data: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        parse(data)
    assert message in str(caught.value)


def test_two_benchmarks_that_read_as_one_workload_are_refused() -> None:
    def twin(doc: Any) -> None:
        doc["benchmarks"] = [{**b, "run_name": "BM_a(x)/8", "name": "BM_a(x)/8"}
                             for b in doc["benchmarks"][:1]] + [
            {**b, "run_name": "BM_a[x]/8", "name": "BM_a[x]/8"} for b in doc["benchmarks"][:1]
        ]  # fmt: skip

    with pytest.raises(ImportFileError, match="both read as workload BM_a_x_"):
        parse(broken(twin))

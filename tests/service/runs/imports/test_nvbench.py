"""nvbench's JSON output (and --jsonbin sample files) read into ImportedFile records."""

from __future__ import annotations

import copy
import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from service.runs.imports import ImportedFile, ImportFileError, fingerprint
from service.runs.imports.nvbench import GPU_MEAN, SAMPLE_FILE, parse

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nvbench"
SAMPLE_NAME = "copy.json-bin/0.bin"  # as the JSON writes it: relative to the JSON's folder
ROOT: dict[str, Any] = json.loads((FIXTURES / "copy.json").read_text())
SAMPLES = (FIXTURES / SAMPLE_NAME).read_bytes()
H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "sm_count": 132,
    "memory_bytes": 84929216512,
    "compute_capability": "9.0",
}


def root() -> dict[str, Any]:
    return copy.deepcopy(ROOT)


def states(doc: dict[str, Any], bench: int = 0) -> list[dict[str, Any]]:
    return doc["benchmarks"][bench]["states"]


def summary(state: dict[str, Any], tag: str) -> dict[str, Any]:
    return next(s for s in state["summaries"] if s["tag"] == tag)


def read(doc: Any, files: dict[str, bytes] | None = None) -> ImportedFile:
    return parse(json.dumps(doc).encode(), files)


def test_one_series_per_state_with_typed_params() -> None:
    imported = parse((FIXTURES / "copy.json").read_bytes())
    assert imported.tool == "nvbench"
    assert imported.suite == "nvbench:bench_copy"
    assert imported.started_at is None
    assert [(s.name, s.params) for s in imported.series] == [
        ("copy_type_sweep", {"T": "F32", "Elements": 65536}),
        ("copy_type_sweep", {"T": "F32", "Elements": 16777216}),
        ("copy_type_sweep", {"T": "F64", "Elements": 65536}),
        ("copy_type_sweep", {"T": "F64", "Elements": 16777216}),
    ]
    assert all(type(s.params["Elements"]) is int for s in imported.series)
    assert {(s.unit, s.method) for s in imported.series} == {("us", "cuda_events")}


def test_without_sample_files_each_state_is_its_cold_gpu_mean_in_us() -> None:
    ok = parse((FIXTURES / "copy.json").read_bytes()).series[:3]
    assert [s.status for s in ok] == ["ok", "ok", "ok"]
    # nv/cold/time/gpu/mean of each state, in seconds in the file.
    means = [4.60051892332558, 96.21727185731288, 5.1008498379208804]
    for series, mean in zip(ok, means, strict=True):
        assert series.samples == [pytest.approx(mean, rel=1e-12)]
    assert [s.note for s in ok] == [
        f"nvbench summary: mean of {n} cold samples (no sample file)" for n in (200, 40, 120)
    ]


def test_samples_come_from_the_jsonbin_file_when_given() -> None:
    imported = parse((FIXTURES / "copy.json").read_bytes(), {SAMPLE_NAME: SAMPLES})
    first, second = imported.series[:2]
    assert len(first.samples) == 200
    assert first.samples[:3] == pytest.approx([4.588229330693, 4.623525910574, 4.589599484461])
    assert min(first.samples) == pytest.approx(4.474507932172855)  # nv/cold/time/gpu/min
    assert max(first.samples) == pytest.approx(4.726285169454059)  # nv/cold/time/gpu/max
    assert sum(first.samples) / 200 == pytest.approx(4.60051892332558, rel=1e-9)
    assert first.note == f"nvbench cold samples from {SAMPLE_NAME}"
    # Only 0.bin was given: the next state, whose file is 1.bin, falls back to its mean.
    assert second.samples == [pytest.approx(96.21727185731288)]
    assert "no sample file" in second.note


def test_a_sample_file_the_json_does_not_name_is_not_used() -> None:
    doc = root()
    data = summary(states(doc)[0], SAMPLE_FILE)["data"]
    # A failed --jsonbin write leaves the summary without filename and size.
    summary(states(doc)[0], SAMPLE_FILE).pop("data")
    assert len(read(doc, {SAMPLE_NAME: SAMPLES}).series[0].samples) == 1
    summary(states(doc)[0], SAMPLE_FILE)["data"] = data
    assert len(read(doc, {"results/copy.json-bin/0.bin": SAMPLES}).series[0].samples) == 1
    assert len(read(doc, {SAMPLE_NAME: SAMPLES}).series[0].samples) == 200


def test_skipped_state() -> None:
    skipped = parse((FIXTURES / "copy.json").read_bytes()).series[3]
    assert skipped.status == "skipped"
    assert skipped.error == "F64 copy with 2^24 elements is not supported on this device."
    assert skipped.samples == []


def test_state_without_cold_gpu_time_failed() -> None:
    doc = root()
    # What nvbench writes where throttling discarded every trial: sample size 0, no times.
    first = states(doc)[0]
    first["summaries"] = [s for s in first["summaries"] if s["tag"] == "nv/cold/sample_size"]
    first["summaries"][0]["data"][0]["value"] = "0"
    series = read(doc).series[0]
    assert (series.status, series.samples) == ("failed", [])
    assert "no cold GPU time" in series.error


def test_environment_of_the_device() -> None:
    environment = parse((FIXTURES / "copy.json").read_bytes()).environment
    assert environment == {
        "fingerprint": "c54a4db3ae310b16",
        "gpu": {**H100, "uuid": ""},
        "driver_version": "",
        "cuda_runtime_version": "",
        "clocks_mhz": {},
        "throttle_reasons_seen": [],
        "ecc_enabled": True,
        "tool": "nvbench",
        "nvbench_version": "0.1.0",
    }
    assert environment["fingerprint"] == fingerprint({**H100, "tool": "nvbench"})


def test_fingerprint_depends_on_the_gpu_only() -> None:
    base = read(root()).environment["fingerprint"]
    doc = root()
    doc["meta"]["argv"][0] = "other_program"
    doc["devices"][0]["ecc_state"] = False
    doc["devices"][0]["sm_default_clock_rate"] = 1
    states(doc)[0]["axis_values"][1]["value"] = "1024"
    assert read(doc).environment["fingerprint"] == base
    doc["devices"][0]["global_memory_size"] = 42
    assert read(doc).environment["fingerprint"] != base


def test_compute_capability_from_sm_version() -> None:
    doc = root()
    doc["devices"][0]["sm_version"] = 1200
    assert read(doc).environment["gpu"]["compute_capability"] == "12.0"
    doc["devices"][0]["sm_version"] = 860
    assert read(doc).environment["gpu"]["compute_capability"] == "8.6"


def test_several_devices_add_the_device_param_and_use_the_first_for_the_environment() -> None:
    doc = root()
    other = {**doc["devices"][0], "id": 1, "name": "NVIDIA A100-SXM4-80GB", "sm_version": 800}
    doc["devices"].append(other)
    # Listed but not run on (nvbench lists every GPU of the host): no device param.
    assert "device" not in read(doc).series[0].params
    on_one = [{**copy.deepcopy(s), "device": 1} for s in states(doc)]
    states(doc).extend(on_one)
    imported = read(doc)
    assert [s.params["device"] for s in imported.series] == [0] * 4 + [1] * 4
    assert imported.environment["gpu"]["name"] == "NVIDIA H100 80GB HBM3"
    states(doc)[0]["axis_values"].append({"name": "device", "type": "int64", "value": "0"})
    with pytest.raises(ImportFileError, match=r"states\[0\]: axis 'device' clashes"):
        read(doc)
    doc["benchmarks"][0]["states"] = on_one
    imported = read(doc)
    assert "device" not in imported.series[0].params
    assert imported.environment["gpu"]["compute_capability"] == "8.0"


def test_float_and_string_axes_and_no_axes() -> None:
    doc = root()
    states(doc)[0]["axis_values"].append({"name": "Ratio", "type": "float64", "value": "0.5"})
    states(doc)[0]["axis_values"].append({"name": "Mode", "type": "string", "value": "7"})
    params = read(doc).series[0].params
    assert (params["Ratio"], type(params["Ratio"]), params["Mode"]) == (0.5, float, "7")
    states(doc)[1]["axis_values"] = None  # json_printer writes null for a benchmark without axes
    assert read(doc).series[1].params == {}


def test_names_become_workload_names_and_do_not_merge_series() -> None:
    doc = root()
    twin = copy.deepcopy(doc["benchmarks"][0])
    doc["benchmarks"][0]["name"] = "copy type<sweep>"
    twin["name"] = "copy_type_sweep_"
    for state in twin["states"]:
        state["axis_values"].append({"name": "Variant", "type": "string", "value": "b"})
    doc["benchmarks"].append(twin)
    imported = read(doc)
    assert len(imported.series) == 8
    assert {s.name for s in imported.series} == {"copy_type_sweep_"}
    assert len({json.dumps(s.params, sort_keys=True) for s in imported.series}) == 8


def test_identical_name_and_params_are_refused_naming_both() -> None:
    doc = root()
    twin = copy.deepcopy(doc["benchmarks"][0])
    twin["name"] = "copy/type/sweep"  # becomes copy_type_sweep too
    doc["benchmarks"].append(twin)
    with pytest.raises(ImportFileError) as error:
        read(doc)
    assert "benchmarks[0].states[0] and benchmarks[1].states[0]" in str(error.value)


@pytest.mark.parametrize(
    ("argv", "suite"),
    [
        (None, "nvbench:nvbench"),
        ([], "nvbench:nvbench"),
        (["C:\\bench\\copy.exe", "--json", "x"], "nvbench:copy.exe"),
        (["bench_copy"], "nvbench:bench_copy"),
    ],
)
def test_suite_from_the_program_name(argv: list[str] | None, suite: str) -> None:
    doc = root()
    if argv is None:
        del doc["meta"]
    else:
        doc["meta"]["argv"] = argv
    assert read(doc).suite == suite


Change = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Change:
    """A change that sets doc[a][b]... (path "a.b.0.c") to value, or deletes it for DELETE."""

    def change(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = doc
        for key in parents:
            node = node[key]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value

    return change


def _gpu_mean(value: Any) -> Change:
    def change(doc: dict[str, Any]) -> None:
        summary(states(doc)[1], GPU_MEAN)["data"][0]["value"] = value

    return change


def _no_gpu_mean_value(doc: dict[str, Any]) -> None:
    summary(states(doc)[1], GPU_MEAN)["data"][0]["name"] = "average"


def _sample_size(doc: dict[str, Any]) -> None:
    summary(states(doc)[1], "nv/cold/sample_size")["data"][0]["value"] = "many"


def _duplicate_state(doc: dict[str, Any]) -> None:
    states(doc).append(copy.deepcopy(states(doc)[2]))


DELETE = object()
MALFORMED: list[tuple[str, Change | bytes, str]] = [
    ("not json", b"{not json", "not nvbench JSON output"),
    ("not utf-8", b"\xff\xfe{}", "not nvbench JSON output"),
    ("a list", b"[1, 2]", "not an object"),
    ("no benchmarks", _set("benchmarks", DELETE), "no 'benchmarks' list"),
    ("benchmarks null", _set("benchmarks", None), "no 'benchmarks' list"),
    ("benchmark not object", _set("benchmarks.0", "copy"), "benchmarks[0]: expected an object"),
    ("benchmark without name", _set("benchmarks.0.name", DELETE), "benchmarks[0]: no name"),
    ("benchmark name empty", _set("benchmarks.0.name", " "), "benchmarks[0]: no name"),
    ("no states", _set("benchmarks.0.states", DELETE), "benchmarks[0]: no 'states'"),
    ("states not list", _set("benchmarks.0.states", 3), "benchmarks[0].states: expected a list"),
    ("state not object", _set("benchmarks.0.states.1", []), "benchmarks[0].states[1]: expected"),
    (
        "no axis_values",
        _set("benchmarks.0.states.1.axis_values", DELETE),
        "benchmarks[0].states[1]: no 'axis_values'",
    ),
    (
        "no summaries",
        _set("benchmarks.0.states.1.summaries", DELETE),
        "benchmarks[0].states[1]: no 'summaries'",
    ),
    (
        "summaries not list",
        _set("benchmarks.0.states.1.summaries", {"tag": GPU_MEAN}),
        "benchmarks[0].states[1].summaries: expected a list",
    ),
    (
        "summary without tag",
        _set("benchmarks.0.states.1.summaries.0.tag", DELETE),
        "benchmarks[0].states[1].summaries[0]: no tag",
    ),
    (
        "int axis not a number",
        _set("benchmarks.0.states.0.axis_values.1.value", "2^16"),
        "benchmarks[0].states[0].axis_values[1] 'Elements': '2^16' is not an integer",
    ),
    (
        "float axis not finite",
        _set(
            "benchmarks.0.states.0.axis_values.1", {"name": "R", "type": "float64", "value": "inf"}
        ),
        "axis_values[1] 'R': 'inf' is not a finite number",
    ),
    (
        "axis value of unknown type",
        _set("benchmarks.0.states.0.axis_values.0.type", "bool"),
        "axis_values[0] 'T': unknown value type 'bool'",
    ),
    (
        "string axis not a string",
        _set("benchmarks.0.states.0.axis_values.0.value", 32),
        "benchmarks[0].states[0].axis_values[0] 'T': 32 is not a string",
    ),
    (
        "axis value without name",
        _set("benchmarks.0.states.0.axis_values.0.name", DELETE),
        "benchmarks[0].states[0].axis_values[0]: no name",
    ),
    ("gpu mean not a number", _gpu_mean("fast"), "'fast' is not a finite number"),
    ("gpu mean nan", _gpu_mean("nan"), "'nan' is not a finite number"),
    ("gpu mean a bool", _gpu_mean(True), "True is not a finite number"),
    ("gpu mean zero", _gpu_mean("0"), "benchmarks[0].states[1] (copy_type_sweep Device=0"),
    ("gpu mean negative", _gpu_mean("-1e-6"), "sample -1.0 us is not > 0"),
    (
        "gpu mean without value",
        _no_gpu_mean_value,
        "benchmarks[0].states[1].summaries[14]: summary 'nv/cold/time/gpu/mean' has no value",
    ),
    ("sample size not a number", _sample_size, "'many' is not an integer"),
    (
        "is_skipped not a bool",
        _set("benchmarks.0.states.1.is_skipped", "no"),
        "benchmarks[0].states[1].is_skipped: 'no' is not true or false",
    ),
    (
        "state device not an id",
        _set("benchmarks.0.states.1.device", "gpu0"),
        "benchmarks[0].states[1].device: 'gpu0' is not an integer",
    ),
    (
        "state device not listed",
        _set("benchmarks.0.states.1.device", 3),
        "benchmarks[0].states[1].device: 3 is not in 'devices'",
    ),
    ("no devices", _set("devices", DELETE), "file: no 'devices'"),
    ("devices null", _set("devices", None), "'devices' is empty"),
    ("devices empty", _set("devices", []), "'devices' is empty"),
    ("device without name", _set("devices.0.name", DELETE), "devices[0]: no name"),
    ("device sm count text", _set("devices.0.number_of_sms", "many"), "devices[0].number_of_sms"),
    ("device sm count zero", _set("devices.0.number_of_sms", 0), "devices[0]: number_of_sms"),
    ("device memory missing", _set("devices.0.global_memory_size", DELETE), "global_memory_size"),
    ("device sm_version float", _set("devices.0.sm_version", 9.0), "devices[0].sm_version: 9.0"),
    ("meta not object", _set("meta", ["argv"]), "meta: expected an object"),
    ("duplicate state", _duplicate_state, "benchmarks[0].states[2] and benchmarks[0].states[4]"),
]


@pytest.mark.parametrize(
    ("change", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_file_is_refused_saying_where(change: Change | bytes, message: str) -> None:
    if isinstance(change, bytes):
        data = change
    else:
        doc = root()
        change(doc)
        data = json.dumps(doc).encode()
    with pytest.raises(ImportFileError) as error:
        parse(data)
    assert message in str(error.value)


def _floats(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _declared(size: str) -> Change:
    def change(doc: dict[str, Any]) -> None:
        summary(states(doc)[0], SAMPLE_FILE)["data"][1]["value"] = size

    return change


BAD_SAMPLES: list[tuple[str, bytes, Change | None, str]] = [
    ("truncated", SAMPLES[:-2], None, f"sample file '{SAMPLE_NAME}' has 798 bytes"),
    ("float64, not float32", _floats(*[1e-6] * 400), None, "declares 200 float32 samples"),
    ("empty", b"", _declared("0"), "declares 0 float32 samples"),
    ("size not a number", SAMPLES, _declared("two hundred"), "'two hundred' is not an integer"),
    ("zero sample", _floats(1e-6, 0.0), _declared("2"), "sample 0.0 us is not > 0"),
    ("negative", _floats(-1e-6, 1e-6), _declared("2"), "states[0] (copy_type_sweep Device=0"),
    ("nan", _floats(1e-6, math.nan), _declared("2"), "sample nan us is not > 0"),
    ("inf", _floats(math.inf, 1e-6), _declared("2"), "sample inf us is not > 0"),
]


@pytest.mark.parametrize(
    ("payload", "change", "message"), [b[1:] for b in BAD_SAMPLES], ids=[b[0] for b in BAD_SAMPLES]
)
def test_bad_sample_file_is_refused_naming_it(
    payload: bytes, change: Change | None, message: str
) -> None:
    doc = root()
    if change is not None:
        change(doc)
    with pytest.raises(ImportFileError) as error:
        read(doc, {SAMPLE_NAME: payload})
    assert message in str(error.value)
    assert "benchmarks[0].states[0]" in str(error.value)


def test_two_float32_samples_in_seconds_become_microseconds() -> None:
    doc = root()
    _declared("2")(doc)
    series = read(doc, {SAMPLE_NAME: _floats(1.5e-6, 0.25)}).series[0]
    assert series.samples == [pytest.approx(1.5, rel=1e-6), pytest.approx(250000.0)]

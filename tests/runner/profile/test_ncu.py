"""runner.profile.ncu on real H100 captures (tests/runner/fixtures/ncu) and on synthetic edge
cases."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest

from runner.document.names import document_kernel_name
from runner.profile import ncu

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"
RAW = FIXTURES / "h100_selected_metrics_raw.csv"
DETAILS = FIXTURES / "h100_basic_sections_details.csv"
PASS = FIXTURES / "h100_kernelwatch_pass_details.csv"  # the exact pass ncu_command builds

GEMM = "gemm_bias_relu"
CUBLAS = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4"
    "_alignc4_execute_kernel__5x_cublas"
)
CUBLAS_SPLIT_K = CUBLAS.replace("execute_kernel", "execute_split_k_kernel")
SEED = (
    "void generate_seed_pseudo<rng_config<curandStateXORWOW, 101>>(unsigned long long, "
    "unsigned long long, unsigned long long, curandOrdering, curandStateXORWOW *, unsigned int *)"
)
GEN = (
    "void gen_sequenced<curandStateXORWOW, float2, normal_args_st, "
    "&curand_normal_scaled2<curandStateXORWOW>, rng_config<curandStateXORWOW, 101>>"
    "(T1 *, T2 *, unsigned long, unsigned long, T3)"
)
KERNELS = [GEMM] * 3 + [CUBLAS, CUBLAS_SPLIT_K, SEED, GEN, GEN, "adamw"] + [GEMM] * 10

HEADER = '"ID","Process ID","Kernel Name","Block Size","Grid Size","Device","CC"'
DETAILS_HEADER = (
    HEADER + ',"Section Name","Metric Name","Metric Unit","Metric Value","Rule Name",'
    '"Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"'
)


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    return ncu.parse_csv(RAW.read_text())


@pytest.fixture(scope="module")
def details() -> list[dict]:
    return ncu.parse_csv(DETAILS.read_text())


@pytest.fixture(scope="module")
def full_pass() -> list[dict]:
    return ncu.parse_csv(PASS.read_text())


def test_raw_page_launches_and_exact_kernel_names(raw: list[dict]) -> None:
    assert [launch["id"] for launch in raw] == list(range(19))
    assert [launch["kernel"] for launch in raw] == KERNELS
    assert {launch["page"] for launch in raw} == {"raw"}
    assert (raw[0]["block"], raw[0]["grid"]) == ("(16, 16, 1)", "(32, 32, 1)")
    assert (raw[3]["block"], raw[3]["grid"]) == ("(128, 1, 1)", "(8, 8, 4)")


def test_raw_page_values_units_and_thousands_separators(raw: list[dict]) -> None:
    metrics = raw[0]["metrics"]
    assert metrics["gpu__time_duration.sum"] == {"value": 60416, "unit": "ns"}
    assert isinstance(metrics["gpu__time_duration.sum"]["value"], int)
    assert metrics["dram__bytes.sum"] == {"value": 2105088, "unit": "byte"}
    assert metrics["dram__bytes.avg"] == {"value": 52627.2, "unit": "byte"}
    ratio = metrics["smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio"]
    assert ratio == {"value": 52945.82, "unit": "inst/warp"}
    assert metrics["launch__registers_per_thread"] == {"value": 32, "unit": "register/thread"}
    assert metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"]["unit"] == "%"
    # Non-numeric values stay strings; empty units stay empty; empty cells are left out.
    assert metrics["launch__cluster_scheduling_policy"] == {"value": "PolicySpread", "unit": ""}
    assert metrics["device__attribute_display_name"]["value"] == "NVIDIA H100 80GB HBM3"
    assert metrics["device__attribute_clock_rate"] == {"value": 1980000, "unit": ""}
    assert "launch__kernel_name" not in metrics
    assert not ncu.IDENTITY_COLUMNS & metrics.keys()
    assert raw[9]["metrics"]["gpu__time_duration.sum"]["unit"] == "ns"


def test_program_output_before_the_header_is_ignored(raw: list[dict]) -> None:
    text = RAW.read_text()
    assert text.startswith("==WARNING==") and "gemm n=512 rel_err" in text.split('"ID"')[0]
    header_onward = text[text.index('"ID",') :]
    assert ncu.parse_csv(header_onward) == raw
    noisy = 'prog says "ID", hello\n==PROF== Disconnected\n' + header_onward + "\n==PROF== end\n"
    assert ncu.parse_csv(noisy) == raw


def test_details_page_launches_and_values(details: list[dict]) -> None:
    assert [launch["id"] for launch in details] == list(range(19))
    assert [launch["kernel"] for launch in details] == KERNELS
    gemm = details[0]["metrics"]
    assert gemm["Elapsed Cycles"] == {"value": 119460, "unit": "cycle"}
    assert gemm["SM Active Cycles"] == {"value": 106548.17, "unit": "cycle"}
    assert gemm["Duration"] == {"value": 60.58, "unit": "us"}
    assert gemm["Achieved Occupancy"] == {"value": 82.93, "unit": "%"}
    assert gemm["Registers Per Thread"] == {"value": 32, "unit": "register/thread"}
    assert gemm["Threads"] == {"value": 262144, "unit": "thread"}
    assert gemm["Total DRAM Elapsed Cycles"] == {"value": 6343680, "unit": "cycle"}
    assert gemm["Cluster Scheduling Policy"] == {"value": "PolicySpread", "unit": ""}
    assert details[3]["metrics"]["Registers Per Thread"]["value"] == 121


def test_details_page_findings_with_estimated_speedups(details: list[dict]) -> None:
    def summary(launch: dict) -> list[tuple]:
        return [
            (f["rule"], f["type"], f["estimated_speedup"], f["speedup_type"])
            for f in launch["findings"]
        ]

    assert summary(details[0]) == [
        ("SOLBottleneck", "INF", None, ""),
        ("AchievedOccupancy", "OPT", 17.07, "local"),
        ("WorkloadImbalance", "OPT", 6.718, "global"),
        ("WorkloadImbalance", "OPT", 7.111, "global"),
        ("WorkloadImbalance", "OPT", 6.718, "global"),  # L1 slices: same speedup, other text
    ]
    assert ("LaunchConfiguration", "OPT", 51.52, "global") in summary(details[5])
    assert ("TheoreticalOccupancy", "OPT", 75.0, "local") in summary(details[3])
    occupancy = details[0]["findings"][1]["description"]
    assert occupancy.startswith("The difference between calculated theoretical (100.0%)")
    assert "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide" in occupancy


def test_every_metric_of_the_fixed_set_exists_on_h100(full_pass: list[dict]) -> None:
    assert [launch["kernel"] for launch in full_pass] == KERNELS
    for launch in full_pass:  # this capture predates issue 15: the first 13 of the set
        for name in list(ncu.METRICS)[:13]:
            assert isinstance(launch["metrics"][name]["value"], int | float), name
    gemm = full_pass[0]["metrics"]
    assert gemm["gpu__time_duration.sum"]["unit"] == "ns"
    assert gemm["dram__bytes_read.sum"] == {"value": 2105088, "unit": "byte"}
    assert gemm["lts__t_sector_hit_rate.pct"]["unit"] == "%"
    # The same display name in two sections: the second gets its section's name.
    assert gemm["Memory Throughput"]["unit"] == "%"
    assert gemm["Memory Workload Analysis/Memory Throughput"]["unit"] == "byte/s"
    assert gemm["Local Memory Spilling Request Overhead"]["value"] == "no data"
    assert {f["rule"] for f in full_pass[0]["findings"]} >= {"CPIStall", "AchievedOccupancy"}


def test_empty_text_and_text_without_header_raise() -> None:
    for text in ("", "\n\n", "gemm n=512 rel_err=4e-07\n==PROF== Disconnected\n"):
        with pytest.raises(ncu.NcuCsvError, match="no Nsight Compute CSV header"):
            ncu.parse_csv(text)


def test_header_only_gives_no_launches() -> None:
    assert ncu.parse_csv(HEADER + "\n") == []
    assert ncu.parse_csv(DETAILS_HEADER) == []
    assert ncu.parse_csv(HEADER + ',"gpu__time_duration.sum"\n"","","","","","","","ns"\n') == []


def test_synthetic_raw_values_names_and_na() -> None:
    text = "\r\n".join(
        [
            "some program output, with a comma",
            HEADER + ',"gpu__time_duration.sum","a__x.ratio","b__y.sum","c__z.sum","d__w.sum"',
            '"","","","","","","","ns","","byte","",""',
            '"1,000","7","void k<int, 2>(float *, int)","(256, 1, 1)","(1, 1, 1)","0","9.0",'
            '"1,234,567.5","n/a","1,02","1e+06",""',
        ]
    )
    [launch] = ncu.parse_csv(text)
    assert launch["id"] == 1000
    assert launch["kernel"] == "void k<int, 2>(float *, int)"
    assert launch["metrics"] == {
        "gpu__time_duration.sum": {"value": 1234567.5, "unit": "ns"},
        "a__x.ratio": {"value": "n/a", "unit": ""},
        "b__y.sum": {"value": "1,02", "unit": "byte"},  # not a thousands separator: kept
        "c__z.sum": {"value": 1e6, "unit": ""},
    }
    section = ncu.to_document_section([launch], metrics=["gpu__time_duration.sum", "a__x.ratio"])
    assert section["kernels"][0]["metrics"] == {
        "gpu__time_duration.sum": {"value": 1234567.5, "unit": "ns", "label": "duration"}
    }


def test_synthetic_details_findings_are_deduplicated() -> None:
    ident = '"0","1","k","(1, 1, 1)","(1, 1, 1)","0","9.0"'
    rule = ident + ',"Occupancy","","","","AchievedOccupancy","OPT","Low, really.","local","1,5"'
    text = "\n".join(
        [DETAILS_HEADER, ident + ',"Occupancy","Achieved Occupancy","%","n/a",', rule, rule]
    )
    [launch] = ncu.parse_csv(text)
    assert launch["metrics"] == {"Achieved Occupancy": {"value": "n/a", "unit": "%"}}
    assert launch["findings"] == [
        {
            "rule": "AchievedOccupancy",
            "type": "OPT",
            "description": "Low, really.",
            "estimated_speedup": None,  # "1,5" is no number ncu prints
            "speedup_type": "local",
        }
    ]
    assert ncu.to_document_section([launch])["kernels"][0]["metrics"] == {}


def test_document_section_merges_launches_by_kernel(details: list[dict]) -> None:
    section = ncu.to_document_section(details)
    assert section["status"] == "ok" and section["reason"] == ""
    kernels = section["kernels"]
    assert [k["kernel"] for k in kernels] == [GEMM, CUBLAS, CUBLAS_SPLIT_K, SEED, GEN, "adamw"]
    gemm = kernels[0]
    assert set(gemm) == {"kernel", "metrics", "findings"}
    cycles = [x["metrics"]["Elapsed Cycles"]["value"] for x in details if x["kernel"] == GEMM]
    assert len(cycles) == 13
    median = statistics.median(cycles)
    assert gemm["metrics"]["Elapsed Cycles"] == {"value": median, "unit": "cycle"}
    assert all(isinstance(m["value"], float) for k in kernels for m in k["metrics"].values())
    assert "Cluster Scheduling Policy" not in gemm["metrics"]  # not numeric
    rules = [f["rule"] for f in gemm["findings"]]
    assert rules.count("AchievedOccupancy") == 1 and rules.count("WorkloadImbalance") == 3
    speedups = [f["estimated_speedup"] for x in details[:3] + details[9:] for f in x["findings"]]
    occupancy = next(f for f in gemm["findings"] if f["rule"] == "AchievedOccupancy")
    assert occupancy["estimated_speedup"] in speedups
    gen = kernels[4]  # two launches; only the second saw L2 slices imbalance
    assert [f["rule"] for f in gen["findings"]].count("WorkloadImbalance") == 4
    assert set(gen["findings"][0]) == {
        "rule",
        "type",
        "description",
        "estimated_speedup",
        "speedup_type",
    }


def test_document_section_keeps_the_fixed_set_from_raw_pages(raw: list[dict]) -> None:
    kernels = ncu.to_document_section(raw)["kernels"]
    assert all(k["metrics"].keys() <= ncu.METRICS.keys() for k in kernels)
    gemm = kernels[0]["metrics"]
    assert gemm["launch__registers_per_thread"] == {
        "value": 32.0,
        "unit": "register/thread",
        "label": "registers per thread",
    }
    assert gemm["gpu__time_duration.sum"]["unit"] == "ns"
    wanted = ncu.to_document_section(raw, metrics=["dram__bytes.sum"])["kernels"][0]["metrics"]
    assert list(wanted) == ["dram__bytes.sum"]


def test_document_section_converts_si_prefixes_before_the_median() -> None:
    def launch(value: float, unit: str) -> dict:
        metrics = {"Duration": {"value": value, "unit": unit}}
        return {"kernel": "k", "page": "details", "metrics": metrics, "findings": []}

    [kernel] = ncu.to_document_section([launch(1, "us"), launch(3000, "ns")])["kernels"]
    assert kernel["metrics"]["Duration"] == {"value": 2.0, "unit": "us"}
    # ncu's K is 1000 (32,768 bytes print as 32.77 Kbyte); an incomparable unit is left out.
    mixed = [launch(1, "Kbyte"), launch(2000, "byte"), launch(9, "warp")]
    merged = ncu.to_document_section(mixed)["kernels"][0]["metrics"]["Duration"]
    assert merged == {"value": 1.5, "unit": "Kbyte"}


def test_document_section_status_and_long_kernel_names() -> None:
    assert ncu.to_document_section([], "unavailable", "no ncu") == {
        "status": "unavailable",
        "reason": "no ncu",
        "kernels": [],
    }
    with pytest.raises(ValueError, match="status"):
        ncu.to_document_section([], "broken")
    long_a, long_b = "k" * 1500 + "a", "k" * 1500 + "b"
    short_a, short_b = document_kernel_name(long_a), document_kernel_name(long_b)
    assert len(short_a) <= 1000 and short_a != short_b
    assert document_kernel_name(GEN) == GEN


def test_document_sections_pass_the_service_validator(
    raw: list[dict], details: list[dict], full_pass: list[dict]
) -> None:
    from service.schemas.document import NcuIn

    for launches in (raw, details, full_pass, raw + details):
        section = ncu.to_document_section(launches)
        assert section["kernels"]
        NcuIn.model_validate(section)
    status, reason = ncu.classify_failure(1, "==ERROR== ERR_NVGPUCTRPERM - no permission")
    NcuIn.model_validate(ncu.to_document_section([], status, reason))


@pytest.mark.parametrize(
    ("returncode", "output", "status", "needle"),
    [
        (
            1,
            "==PROF== Connected to process 12\n==ERROR== ERR_NVGPUCTRPERM - The user does not "
            "have permission to access NVIDIA GPU Performance Counters on the target device 0.",
            "unavailable",
            "ERR_NVGPUCTRPERM",
        ),
        (127, "bash: ncu: command not found", "unavailable", "not found"),
        (127, "", "unavailable", "not found"),
        (None, "[Errno 2] No such file or directory: 'ncu'", "unavailable", "not found"),
        (0, "==PROF== Disconnected\n==WARNING== No kernels were profiled.\n", "unavailable", "no"),
        (1, "==ERROR== Failed to initialize the profiler: LibraryNotLoaded", "unavailable", "GPU"),
        (0, "==PROF== Report: /tmp/probe.ncu-rep\n", "ok", ""),
    ],
)
def test_classify_failure_unavailable(
    returncode: int | None, output: str, status: str, needle: str
) -> None:
    got_status, reason = ncu.classify_failure(returncode, output)
    assert got_status == status
    assert needle in reason


def test_classify_failure_failed_keeps_the_error_lines() -> None:
    output = "\n".join(f"line {i}" for i in range(50))
    status, reason = ncu.classify_failure(3, output)
    assert status == "failed"
    assert reason.startswith("ncu exited with code 3") and "line 49" in reason
    assert "line 29" not in reason
    status, reason = ncu.classify_failure(1, "x\n==ERROR== The application returned an error\ny")
    assert status == "failed" and reason.endswith("==ERROR== The application returned an error")


def test_ncu_command_composition() -> None:
    cmd = ncu.ncu_command(
        ["python3", "bench.py", "--n", "512"],
        kernel_regex="gemm_.*",
        launch_skip=3,
        launch_count=2,
        metrics=["gpu__time_duration.sum", "lts__t_sector_hit_rate.pct"],
        sections=["SpeedOfLight", "Occupancy"],
    )
    assert cmd == [
        *("ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base"),
        *("--metrics", "gpu__time_duration.sum,lts__t_sector_hit_rate.pct"),
        *("--section", "SpeedOfLight", "--section", "Occupancy"),
        *("--kernel-name", "regex:gemm_.*", "--launch-skip", "3", "--launch-count", "2"),
        *("--target-processes", "all", "python3", "bench.py", "--n", "512"),
    ]


def test_ncu_command_defaults_and_report_mode() -> None:
    cmd = ncu.ncu_command(["./bench"], report=Path("/tmp/r"), ncu="/opt/ncu")
    assert cmd[:6] == ["/opt/ncu", "--clock-control", "none", "-o", "/tmp/r", "--force-overwrite"]
    assert "--csv" not in cmd and "--kernel-name" not in cmd
    assert cmd[cmd.index("--metrics") + 1] == ",".join(ncu.METRICS)
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == list(ncu.SECTIONS)
    assert cmd[-3:] == ["--target-processes", "all", "./bench"]
    assert ncu.export_command("/tmp/r.ncu-rep", "details") == [
        *("ncu", "--import", "/tmp/r.ncu-rep", "--csv", "--page", "details"),
        *("--print-units", "base"),
    ]
    with pytest.raises(ValueError):
        ncu.export_command("r", "summary")
    with pytest.raises(ValueError):
        ncu.ncu_command([])
    with pytest.raises(ValueError):
        ncu.ncu_command(["./bench"], launch_count=0)


def test_metric_set_covers_the_required_quantities() -> None:
    labels = set(ncu.METRICS.values())
    for label in (
        *("duration", "achieved occupancy", "L2 hit rate", "tensor pipe utilization"),
        *("DRAM bytes read", "DRAM bytes written", "L2 sectors", "L1 sectors", "L1 hit rate"),
        *("global load sectors", "global load requests", "instructions executed"),
        *("warps launched", "theoretical occupancy", "occupancy limit: registers"),
        *("waves per SM", "grid size", "eligible warps per cycle", "local load sectors"),
        *("shared load bank conflicts", "stall: long scoreboard (L1TEX: global, local, texture)"),
    ):
        assert label in labels, label
    assert len(ncu.METRICS) == 65 and all("__" in name for name in ncu.METRICS)


def test_the_whole_set_came_back_from_an_h100() -> None:
    """The cause benchmark's capture (benchmarks/cause_gpu.py, H100, ncu 2025.3.1): every
    name of the set, for every kernel of both builds, as a number; the one name added after it
    (L2 sectors read by the SMs) in the work-counter capture (benchmarks/work_counters.py)."""
    root = Path(__file__).parents[3]
    later = {"lts__t_sectors_srcunit_tex_op_read.sum"}
    folder = root / "tests" / "service" / "fixtures" / "causes_h100"
    for name in ("base.json.gz", "head.json.gz"):
        doc = json.loads(gzip.decompress((folder / name).read_bytes()))
        kernels = [k for w in doc["workloads"] for k in w["ncu"]["kernels"]]
        assert len(kernels) == 11
        for kernel in kernels:
            assert set(kernel["metrics"]) == set(ncu.METRICS) - later, kernel["kernel"]
            assert all(isinstance(v["value"], int | float) for v in kernel["metrics"].values())
    counted = json.loads((root / "benchmarks" / "results" / "work_counters_h100.json").read_text())
    for per_kernel in counted.values():
        for values in per_kernel.values():
            assert all(len(values[name]) == 15 for name in later)  # 3 processes x 5 launches


def test_each_metric_of_the_fixed_set_carries_the_runners_label() -> None:
    """The one table of ncu metrics is the runner's: each metric of METRICS travels with its
    label (the service shows it); a metric outside the set (a details page's) has none."""
    launches = [
        {"kernel": "k", "page": "raw", "metrics": {
            "smsp__inst_executed.sum": {"value": 120.0, "unit": "inst"},
            "dram__bytes_read.sum": {"value": 64.0, "unit": "byte"}}, "findings": []},
        {"kernel": "k", "page": "details", "metrics": {
            "Registers Per Thread": {"value": 32.0, "unit": "register/thread"}}, "findings": []},
    ]  # fmt: skip
    (kernel,) = ncu.to_document_section(launches)["kernels"]
    assert kernel["metrics"]["smsp__inst_executed.sum"]["label"] == "instructions executed"
    assert kernel["metrics"]["dram__bytes_read.sum"]["label"] == ncu.METRICS["dram__bytes_read.sum"]
    assert "label" not in kernel["metrics"]["Registers Per Thread"]

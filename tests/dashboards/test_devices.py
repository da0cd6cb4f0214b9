"""Tests of dashboards.devices: which datasheet entry a GPU's reported name picks (case-insensitive
substrings, the more specific variants first), the peaks being in FLOP/s and byte/s, the FP32
peak derived from SM count x lanes x 2 x clock for a GPU not in the table (64 lanes before
Ampere and on the A100's 8.0, 128 otherwise) and when nothing can be derived, and `achieved`:
throughput of one launch, its fraction of the roof of its precision (aliases mapped, unknown
ones falling back to FP32), and which roof a kernel is nearer."""

from __future__ import annotations

import pytest

from dashboards.devices import Achieved, device_peak
from dashboards.devices import achieved as achieved_of


@pytest.mark.parametrize(
    ("reported", "entry"),
    [
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H100 SXM5 80GB", "H100 SXM"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L40", "L40"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ],
)
def test_a_reported_gpu_name_picks_its_datasheet_entry(reported: str, entry: str) -> None:
    peak = device_peak({"name": reported})
    assert peak is not None
    assert (peak.name, peak.source) == (entry, "datasheet")


@pytest.mark.parametrize("reported", ["NVIDIA RTX A1000", "NVIDIA GH200 480GB", "NVIDIA L40G"])
def test_a_name_that_merely_contains_a_known_one_is_not_taken_for_it(reported: str) -> None:
    """Matched by whole words: an "RTX A1000" holds "a100", a "GH200" holds "h200" and an "L40"
    held "l4" as substrings; none of them has those peaks (an L40 was once read as an L4)."""
    assert device_peak({"name": reported}) is None


def test_name_matching_ignores_case() -> None:
    peak = device_peak({"name": "nvidia h100 pcie"})
    assert peak is not None and peak.name == "H100 PCIe"


def test_a_known_name_wins_over_sm_count_and_clock() -> None:
    # the datasheet has the tensor-core peaks and the bandwidth a derivation cannot give
    gpu = {"name": "NVIDIA H200", "sm_count": 1, "compute_capability": "9.0"}
    peak = device_peak(gpu, {"sm_max": 1.0})
    assert peak is not None and peak.source == "datasheet"


def test_datasheet_peaks_are_in_flop_and_bytes_per_second() -> None:
    h200 = device_peak({"name": "NVIDIA H200"})
    assert h200 is not None
    assert h200.flops["fp16"] == pytest.approx(989.4e12)
    assert h200.flops["fp32"] == pytest.approx(67e12)
    assert h200.bytes_per_s == pytest.approx(4.8e12)
    pcie = device_peak({"name": "NVIDIA H100 PCIe"})
    assert pcie is not None and pcie.flops["fp64"] == pytest.approx(25.6e12)
    # the Ada cards have no FP64 entry: their FP64 rate is too low to be a roof worth drawing
    l40s = device_peak({"name": "NVIDIA L40S"})
    assert l40s is not None and "fp64" not in l40s.flops


@pytest.mark.parametrize(
    ("gpu", "sm_max", "tflops"),
    [
        # each derivation lands on the card's published FP32 figure
        ({"name": "Tesla T4", "sm_count": 40, "compute_capability": "7.5"}, 1590, 8.1408),
        ({"name": "NVIDIA A800", "sm_count": 108, "compute_capability": "8.0"}, 1410, 19.4918),
        ({"name": "RTX 3090", "sm_count": 82, "compute_capability": "8.6"}, 1695, 35.5819),
    ],
)
def test_an_unknown_gpu_gets_an_fp32_peak_from_sm_count_lanes_and_clock(
    gpu: dict[str, object], sm_max: float, tflops: float
) -> None:
    peak = device_peak(gpu, {"sm_max": sm_max})
    assert peak is not None
    assert peak.name == gpu["name"]
    assert peak.flops == {"fp32": pytest.approx(tflops * 1e12, rel=1e-4)}
    assert peak.bytes_per_s is None
    assert peak.source != "datasheet"


def test_a_derived_peak_without_a_name_is_called_unknown() -> None:
    peak = device_peak({"sm_count": 10, "compute_capability": "9.0"}, {"sm_max": 1000})
    assert peak is not None and peak.name == "unknown GPU"
    assert peak.flops["fp32"] == pytest.approx(10 * 128 * 2 * 1e9)


FUTURE = {"name": "Some Future GPU", "sm_count": 100, "compute_capability": "9.0"}


@pytest.mark.parametrize(
    ("gpu", "clocks"),
    [
        ({"name": FUTURE["name"]}, {"sm_max": 1980}),
        (FUTURE, None),
        (FUTURE, {}),
        ({**FUTURE, "sm_count": 0}, {"sm_max": 1980}),
        ({**FUTURE, "compute_capability": "sm_90"}, {"sm_max": 1980}),
    ],
)
def test_nothing_is_known_without_a_name_match_sm_count_clock_and_numeric_capability(
    gpu: dict[str, object], clocks: dict[str, object] | None
) -> None:
    assert device_peak(gpu, clocks) is None


def test_achieved_divides_by_the_launch_time_and_the_device_roofs() -> None:
    h200 = device_peak({"name": "NVIDIA H200"})
    # 3 GFLOP and 600 MB in 1 ms: 3 TFLOP/s of 67, 600 GB/s of 4800
    got = achieved_of(3e9, 6e8, 1e-3, h200)
    assert got.flops_per_s == pytest.approx(3e12)
    assert got.bytes_per_s == pytest.approx(6e11)
    assert got.flop_fraction == pytest.approx(3 / 67)
    assert got.byte_fraction == pytest.approx(0.125)
    assert got.bound == "memory"
    assert got.fraction == pytest.approx(0.125)


@pytest.mark.parametrize(
    ("precision", "roof_tflops"),
    [
        ("bf16", 989.4),
        ("half", 989.4),
        ("float16", 989.4),
        ("FP16", 989.4),
        ("tf32", 494.7),
        ("float32", 67),
        ("f32", 67),
        ("fp64", 34),
        # no int8 entry: the FP32 roof is the one left to compare with
        ("int8", 67),
    ],
)
def test_the_precision_picks_the_roof(precision: str, roof_tflops: float) -> None:
    h200 = device_peak({"name": "NVIDIA H200"})
    got = achieved_of(1e12, None, 1.0, h200, precision)
    assert got.flop_fraction == pytest.approx(1 / roof_tflops)


def test_a_precision_the_device_lists_no_peak_for_falls_back_to_fp32() -> None:
    l4 = device_peak({"name": "NVIDIA L4"})
    got = achieved_of(30.3e12, None, 1.0, l4, "fp64")
    assert got.flop_fraction == pytest.approx(1.0)


def test_no_time_or_no_counts_give_no_throughput() -> None:
    h200 = device_peak({"name": "NVIDIA H200"})
    for seconds in (0.0, -1e-3):
        got = achieved_of(1e9, 1e9, seconds, h200)
        assert (got.flops_per_s, got.bytes_per_s, got.fraction) == (None, None, None)
    # a workload that declares 0 FLOP (a copy) has no compute fraction, not a fraction of 0
    copy = achieved_of(0, 1e9, 1e-3, h200)
    assert copy.flops_per_s is None and copy.flop_fraction is None
    assert copy.bound == "memory"


def test_without_a_known_roof_throughput_stays_but_fractions_do_not() -> None:
    got = achieved_of(1e9, 1e9, 1e-3, None)
    assert (got.flops_per_s, got.bytes_per_s) == (pytest.approx(1e12), pytest.approx(1e12))
    assert (got.flop_fraction, got.byte_fraction, got.bound) == (None, None, None)
    # a derived peak knows FP32 but not the memory bandwidth
    derived = device_peak({"sm_count": 10, "compute_capability": "9.0"}, {"sm_max": 1000})
    partial = achieved_of(1e9, 1e9, 1e-3, derived)
    assert partial.bytes_per_s == pytest.approx(1e12) and partial.byte_fraction is None
    assert partial.bound == "compute"


def test_bound_names_the_nearer_roof_and_a_tie_counts_as_compute() -> None:
    assert Achieved(None, None, 0.4, 0.4).bound == "compute"
    assert Achieved(None, None, 0.3, 0.6).bound == "memory"
    assert Achieved(None, None, None, 0.1).bound == "memory"
    assert Achieved(None, None, 0.1, None).bound == "compute"
    assert Achieved(None, None, None, None).bound is None


def test_fraction_is_the_larger_known_fraction() -> None:
    assert Achieved(None, None, 0.3, 0.6).fraction == 0.6
    assert Achieved(None, None, None, 0.2).fraction == 0.2
    assert Achieved(None, None, 0.0, None).fraction == 0.0
    assert Achieved(None, None, None, None).fraction is None

"""The cause numerics on plain counters: each rule, and the H100 captures of the cause benchmark."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from service.analysis import causes as C
from service.evaluation.alerts.attribution import _moved_metrics, kernel_changes
from service.evaluation.alerts.attribution_text import summary
from service.models import Series

FIXTURES = Path(__file__).parents[1] / "fixtures" / "causes_h100"

# A memory-bound streaming kernel on the H100 (rounded from the cause benchmark's base capture).
STREAM = {
    C.DURATION: 90_000.0,
    "dram__bytes_read.sum": 134e6,
    "dram__bytes_write.sum": 134e6,
    C.BUSY["dram"]: 82.0,
    C.BUSY["l2"]: 77.0,
    C.BUSY["l1"]: 22.0,
    C.BUSY["issue"]: 5.0,
    C.L2_SECTORS: 13e6,
    C.L1_SECTORS: 8.4e6,
    C.SHARED: 8_448.0,
    C.INSTRUCTIONS: 4.2e6,
    **dict.fromkeys(C.LOCAL, 0.0),
    **dict.fromkeys(C.LOCAL_INSTRUCTIONS, 0.0),
    C.GLOBAL_ACCESS["load"][0]: 4.19e6,
    C.GLOBAL_ACCESS["load"][1]: 262_144.0,
    C.GLOBAL_ACCESS["store"][0]: 4.19e6,
    C.GLOBAL_ACCESS["store"][1]: 262_144.0,
    **dict.fromkeys(C.ATOMICS, 0.0),
    C.OCCUPANCY: 80.0,
    C.ACTIVE: 160_000.0,
    C.ELAPSED: 175_000.0,
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 0.02,
}


def slower(base: dict[str, float], factor: float, **moved: float) -> dict[str, float]:
    """`base` taking `factor` times as long, with the counters in `moved` (keys with dots
    spelled with '__dot__' are not needed: pass a dict) replaced."""
    head = dict(base)
    head[C.DURATION] = base[C.DURATION] * factor
    head.update(moved)
    return head


def ranked(base: dict[str, float], head: dict[str, float]) -> list[C.Cause]:
    return C.rank(C.candidates(base, head), head[C.DURATION] - base[C.DURATION])


def test_more_dram_bytes_explain_a_memory_bound_slowdown_and_costless_moves_do_not() -> None:
    head = slower(STREAM, 1.2)
    head.update({
        "dram__bytes_read.sum": 201e6,  # +67 MB
        C.L2_SECTORS: 16e6,
        C.L1_SECTORS: 10.5e6,
        C.GLOBAL_ACCESS["load"][0]: 6.29e6,
        C.GLOBAL_ACCESS["load"][1]: 393_216.0,  # more requests, the same pattern
        C.SHARED: 139_000.0,  # +1,550%: but 1% of the L1's traffic
        C.INSTRUCTIONS: 7.2e6,  # +72% on schedulers 6% busy
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 0.11,  # +450%
    })  # fmt: skip
    causes = ranked(STREAM, head)
    assert causes[0].kind == "dram"
    assert causes[0].label == "DRAM bytes read 134M → 201M (+50%)"
    assert 0.8 <= causes[0].share <= 1.2
    kinds = [c.kind for c in causes]
    assert "shared_memory" not in kinds and "access_pattern" not in kinds
    assert all(c.share < 0.3 for c in causes[1:])  # nothing else explains it


def test_a_large_relative_move_of_a_small_quantity_explains_little() -> None:
    head = slower(STREAM, 1.1, **{C.SHARED: 8_448.0 * 20})
    cause = next(c for c in C.candidates(STREAM, head) if c.kind == "shared_memory")
    assert cause.explained_ns / (head[C.DURATION] - STREAM[C.DURATION]) < C.MIN_SHARE
    assert "shared_memory" not in [c.kind for c in ranked(STREAM, head)]


def test_uncoalesced_access_counts_only_the_sectors_a_worse_pattern_costs() -> None:
    base = dict(STREAM, **{C.BUSY["l2"]: 76.0, C.BUSY["dram"]: 77.0})
    head = slower(base, 6.0)
    head.update({
        C.GLOBAL_ACCESS["load"][0]: 32 * 262_144.0,  # 4 -> 32 sectors per request
        C.GLOBAL_ACCESS["store"][0]: 32 * 262_144.0,
        C.L1_SECTORS: 2 * 32 * 262_144.0,
        C.L2_SECTORS: 29e6,
        C.BUSY["dram"]: 14.0,
        C.BUSY["l2"]: 80.0,
        C.BUSY["l1"]: 46.0,
    })  # fmt: skip
    causes = ranked(base, head)
    assert causes[0].kind == "access_pattern"
    assert "global loads 16.0 → 32.0 sectors per request" in causes[0].label
    assert [c.kind for c in causes].count("l2") == 0  # the L2 traffic is the pattern's


def test_spills_are_local_traffic_and_their_instructions_are_not_counted_twice() -> None:
    base = dict(STREAM, **{C.BUSY["issue"]: 97.0, C.BUSY["dram"]: 0.1, C.BUSY["l2"]: 1.0})
    head = slower(base, 12.0)
    head.update({
        C.LOCAL[0]: 121e6,
        C.LOCAL[1]: 121e6,
        C.L1_SECTORS: 243e6,
        C.LOCAL_INSTRUCTIONS[0]: 30e6,
        C.LOCAL_INSTRUCTIONS[1]: 30e6,
        C.INSTRUCTIONS: base[C.INSTRUCTIONS] + 60e6,
        C.BUSY["issue"]: 15.0,
        C.BUSY["l1"]: 48.0,
        C.BUSY["l2"]: 71.0,
    })  # fmt: skip
    causes = ranked(base, head)
    assert causes[0].kind == "spills"
    assert "instructions" not in [c.kind for c in causes]


@pytest.mark.parametrize(
    ("limit", "kind", "words"),
    [
        ("launch__occupancy_limit_registers", "occupancy_registers", "limited by registers"),
        ("launch__occupancy_limit_shared_mem", "occupancy_shared_memory", "by shared memory"),
    ],
)
def test_lost_occupancy_is_named_by_the_limiter_that_fell(
    limit: str, kind: str, words: str
) -> None:
    limits = dict.fromkeys(C.LIMITS, 32.0) | {"launch__occupancy_limit_registers": 10.0}
    base = dict(STREAM, **limits, **{C.OCCUPANCY: 97.0, C.BUSY["dram"]: 2.0, C.BUSY["l2"]: 37.0})
    head = slower(base, 1.6, **{C.OCCUPANCY: 60.0, limit: 5.0, C.BUSY["l2"]: 23.0})
    (top, *_) = ranked(base, head)
    assert top.kind == kind and words in top.label
    assert top.label.startswith("achieved occupancy 97% → 60%")


def test_occupancy_costs_nothing_where_a_unit_is_saturated() -> None:
    head = slower(STREAM, 1.3, **{C.OCCUPANCY: 66.0, C.BUSY["dram"]: 95.0})
    cause = next(c for c in C.candidates(STREAM, head) if c.kind.startswith("occupancy"))
    assert cause.explained_ns < 0.1 * (head[C.DURATION] - STREAM[C.DURATION])


def test_idle_sms_explain_a_smaller_grid() -> None:
    base = dict(STREAM, **{"launch__grid_size": 132.0, C.ACTIVE: 160e3, C.ELAPSED: 165e3})
    head = slower(base, 1.95, **{"launch__grid_size": 66.0, C.ELAPSED: 322e3})
    (top,) = ranked(base, head)
    assert top.kind == "parallelism"
    assert top.label == "SMs busy 97% → 50% of the time (grid 132 → 66 blocks)"


def test_a_few_more_atomics_cannot_explain_microseconds() -> None:
    base = dict(STREAM, **{C.ATOMICS[1]: 10.0})
    head = slower(base, 1.2, **{C.ATOMICS[1]: 20.0})
    cause = next(c for c in C.candidates(base, head) if c.kind == "atomics")
    assert cause.explained_ns <= 10 * C.ATOMIC_SERIAL_NS


def test_rank_drops_what_explains_little_and_nothing_without_a_slowdown() -> None:
    causes = [C.Cause("a", "a", 50.0), C.Cause("b", "b", 5.0), C.Cause("c", "c", 90.0)]
    assert [c.kind for c in C.rank(causes, 100.0)] == ["c", "a"]
    assert C.rank(causes, 0.0) == []
    assert C.candidates(STREAM, {**STREAM, C.DURATION: 0.0}) == []


def test_kernel_changes_share_the_slowdown_among_the_kernels_that_grew() -> None:
    rows = kernel_changes(
        ["first", "second", "third"],
        {"first": 95_000.0, "second": 95_000.0, "third": 10_000.0},
        {"first": 94_000.0, "second": 143_000.0, "third": 12_000.0},
        0.23,
    )
    assert [r["kernel"] for r in rows] == ["second", "third", "first"]
    assert rows[0]["share"] == pytest.approx(48 / 50)
    assert rows[0]["change"] == pytest.approx(143 / 95 - 1)
    assert rows[2]["share"] == 0.0
    (only,) = kernel_changes(["k"], {}, {}, 0.06)  # one kernel: the measured change, all of it
    assert only["share"] == 1.0 and only["change"] == 0.06


def _captures(name: str) -> dict[tuple[str, str], dict[str, float]]:
    doc = json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))
    return {
        (w["params"]["case"], k["kernel"]): {m: v["value"] for m, v in k["metrics"].items()}
        for w in doc["workloads"]
        for k in w["ncu"]["kernels"]
    }


def test_the_h100_captures_rank_each_known_cause_first() -> None:
    from benchmarks.cause_gpu import EXPECTED

    base, head = _captures("base"), _captures("head")
    truth = json.loads((FIXTURES / "truth.json").read_text())["workloads"]
    for case, (kernel, kind) in EXPECTED.items():
        b, h = base[(case, kernel)], head[(case, kernel)]
        change = truth[f"cause[case={case}]"]["change"]
        if case == "second_kernel":  # the workload's change; the kernel's own is larger
            change = h[C.DURATION] / b[C.DURATION] - 1
        causes = C.rank(C.candidates(b, h), h[C.DURATION] * change / (1 + change))
        assert causes and causes[0].kind == kind, (case, [(c.kind, c.share) for c in causes])
        assert causes[0].share >= 0.5, case


def test_the_h100_aa_captures_show_no_cause_worth_naming() -> None:
    """Base against its A/A rebuild: whatever noise moved explains no real slowdown (a 5%
    slowdown, which did not happen, stands in)."""
    base, aa = _captures("base"), _captures("aa")
    for key, b in base.items():
        a = aa[key]
        causes = C.rank(C.candidates(b, a), 0.05 * a[C.DURATION])
        assert all(c.share < 0.5 for c in causes), (key, [(c.kind, c.share) for c in causes])


def test_an_unranked_capture_names_what_moved_by_the_runners_labels() -> None:
    """A capture without the counters that rank causes names the counters that moved most, by
    the label the runner sent (ncu's name without one), never its duration."""
    base = {"dram__bytes_read.sum": 1e6, "gpu__time_duration.sum": 10.0, "x__y.sum": 5.0}
    head = {"dram__bytes_read.sum": 2e6, "gpu__time_duration.sum": 12.0, "x__y.sum": 8.0}
    moved = _moved_metrics(base, head, {"dram__bytes_read.sum": "DRAM bytes read"})
    assert [(m["metric"], m["label"]) for m in moved] == [
        ("dram__bytes_read.sum", "DRAM bytes read"), ("x__y.sum", "x__y.sum"),
        ("gpu__time_duration.sum", "gpu__time_duration.sum")]  # fmt: skip
    kernel = {"kernel": "k", "change": 0.2, "share": 1.0, "legacy": True, "ncu": True,
              "resources": [], "metrics": moved}  # fmt: skip
    text = summary(Series(workload="stream", params={}), 0.2, [kernel], [], True)
    assert "moved most: DRAM bytes read 1e+06→2e+06, x__y.sum 5→8" in text
    assert "duration" not in text


def test_a_counter_from_zero_is_new_not_a_percentage() -> None:
    """A counter that was 0 at the base (no spills, no atomics) says "new", never "+100%", and
    is listed first among those that moved."""
    base = {"local_stores.sum": 0.0, "x__y.sum": 5.0, "still.sum": 0.0}
    head = {"local_stores.sum": 4096.0, "x__y.sum": 8.0, "still.sum": 0.0}
    moved = _moved_metrics(base, head, {})
    assert [(m["metric"], m["change"]) for m in moved] == [
        ("local_stores.sum", None),
        ("x__y.sum", pytest.approx(0.6)),
        ("still.sum", 0.0),
    ]

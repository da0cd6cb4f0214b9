"""runner.profile.timeline's pure parts (aggregation, nsys output, the nsys probe and the fallback
to CUPTI), and the CUPTI busy time and timer choice that timing shares with it."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from runner.measure import kernel_steps
from runner.measure.phase import Outcome
from runner.measure.sampling import TimingMethodUnavailable, collect, select_timer, workload_method
from runner.measure.timers import busy_ns
from runner.profile import timeline
from runner.suite.load import Timing

# `nsys stats --report cuda_gpu_kern_sum --format csv` (nsys 2024/2025 column names), with the
# lines nsys prints before the table.
KERN_SUM = """\
Generating SQLite file /tmp/x/timeline.sqlite from /tmp/x/timeline.nsys-rep
Processing [/tmp/x/timeline.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]...

"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",\
"StdDev (ns)","Name"
61.5,"1,230,000",10,123000.0,123000.0,122000,124000,500.0,"gemm_bwd_tn_dweight"
30.0,600000,10,60000.0,60000.0,59000,61000,400.0,"gemm_fwd_splitk_partial"
8.5,170000,5,34000.0,34000.0,33000,35000,300.0,"void cutlass::Kernel<float, 2>(Params, int)"
"""


def test_aggregate_gives_calls_and_time_per_step_and_shares() -> None:
    step = [("gemm_fwd", 0, 300), ("mse", 300, 360), ("gemm_fwd", 400, 700), ("adamw", 700, 790)]
    records = step + [(name, s + 1000, e + 1000) for name, s, e in step]
    kernels = kernel_steps.aggregate(records, steps=2)
    assert [k["kernel"] for k in kernels] == ["gemm_fwd", "adamw", "mse"]
    assert kernels[0] == {"kernel": "gemm_fwd", "calls": 2, "total_ns": 600.0, "share": 0.8}
    assert kernels[1]["calls"] == 1 and kernels[1]["total_ns"] == 90.0
    assert sum(k["share"] for k in kernels) == pytest.approx(1.0, abs=1e-5)


def test_aggregate_of_nothing_is_empty_and_a_rare_kernel_still_counts_once() -> None:
    assert kernel_steps.aggregate([], steps=5) == []
    kernels = kernel_steps.aggregate([("once", 0, 10)], steps=5)
    assert kernels == [{"kernel": "once", "calls": 1, "total_ns": 2.0, "share": 1.0}]


def test_kern_sum_csv_is_parsed_past_nsys_chatter() -> None:
    rows = timeline.parse_kern_sum(KERN_SUM)
    assert rows[0] == ("gemm_bwd_tn_dweight", 10, 1230000.0)
    assert rows[2] == ("void cutlass::Kernel<float, 2>(Params, int)", 5, 170000.0)
    kernels = kernel_steps.from_totals(rows, steps=5)
    assert kernels[0]["calls"] == 2 and kernels[0]["total_ns"] == 246000.0
    assert sum(k["share"] for k in kernels) == pytest.approx(1.0, abs=1e-5)
    assert timeline.parse_kern_sum("SKIPPED: no CUDA kernel data\n") == []


def test_sqlite_export_gives_the_same_rows(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        c.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, shortName INT, "
                  "demangledName INT)")  # fmt: skip
        c.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "k1"), (2, "k2")])
        c.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?)",
            [(0, 100, 1, 1), (200, 250, 2, 2), (300, 400, 1, 1)],
        )
    assert sorted(timeline.sqlite_kernels(db)) == [("k1", 2, 200.0), ("k2", 1, 50.0)]


def fake_tool(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


# An nsys like the one bundled with Nsight Compute on the H100 host: a .qdstrm, no report.
QDSTRM_ONLY = """\
echo call >> "$(dirname "$0")/calls"
while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done
touch "$out.qdstrm"
echo "Importer error: QdstrmImporter not found" >&2
exit 1
"""

# An nsys that works: a report from `profile`, the kernel summary from `stats`.
WORKING = f"""\
case "$1" in
profile) while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done
         touch "$out.nsys-rep";;
stats) cat <<'EOF'
{KERN_SUM}EOF
;;
esac
"""


def test_probe_reports_why_and_remembers_a_failure(tmp_path: Path) -> None:
    nsys = fake_tool(tmp_path / "nsys", QDSTRM_ONLY)
    cache = tmp_path / "cache" / "probe.json"
    ok, why = timeline.probe(nsys, cache)
    assert not ok
    assert "wrote no report" in why and "probe.qdstrm" in why and "QdstrmImporter" in why
    ok, again = timeline.probe(nsys, cache)
    assert not ok and again.startswith(why) and "probed" in again
    assert (tmp_path / "calls").read_text().count("call") == 1  # probed once


def test_probe_accepts_an_nsys_that_writes_a_report(tmp_path: Path) -> None:
    assert timeline.probe(fake_tool(tmp_path / "nsys", WORKING), tmp_path / "p.json") == (
        True,
        "",
    )


def fake_suite(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        root=tmp_path, workloads="w", check=None, device="cuda", timing=Timing(timeout_seconds=5)
    )


def records(*ids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(info={"id": wid}, timeline=None, timings=[]) for wid in ids]


def cupti_phase(monkeypatch: pytest.MonkeyPatch, calls: list) -> None:
    def run_phase(suite, mode, ids, env=None, **_):
        calls.append((mode, list(ids)))
        kernels = kernel_steps.aggregate([("k", 0, 10)], 1)
        return SimpleNamespace(
            outcomes={i: Outcome("ok", result={"kernels": kernels}) for i in ids}
        )

    monkeypatch.setattr(timeline, "run_phase", run_phase)


def test_without_nsys_the_timeline_comes_from_cupti_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "find_nsys", lambda: None)
    calls: list = []
    cupti_phase(monkeypatch, calls)
    recs, seen = records("train[a]", "train[b]"), []
    timeline.capture(fake_suite(tmp_path), recs, {}, seen.append, print, tmp_path / "p.json")
    assert calls == [("timeline", ["train[a]", "train[b]"])]
    assert seen == ["train[a]", "train[b]"]
    for r in recs:
        assert r.timeline["source"] == "cupti"
        assert "nsys) not found" in r.timeline["reason"] and "CUPTI" in r.timeline["reason"]
        assert r.timeline["kernels"][0]["share"] == 1.0


def test_an_nsys_without_report_falls_back_to_cupti(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "find_nsys", lambda: fake_tool(tmp_path / "nsys", QDSTRM_ONLY))
    calls: list = []
    cupti_phase(monkeypatch, calls)
    recs = records("train[a]")
    timeline.capture(fake_suite(tmp_path), recs, {}, lambda _: None, print, tmp_path / "p.json")
    assert recs[0].timeline["source"] == "cupti"
    assert "wrote no report" in recs[0].timeline["reason"]
    assert calls == [("timeline", ["train[a]"])]


def test_a_working_nsys_is_used_and_cupti_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "find_nsys", lambda: fake_tool(tmp_path / "nsys", WORKING))
    calls: list = []
    cupti_phase(monkeypatch, calls)
    recs = records("train[a]", "train[b]")
    timeline.capture(fake_suite(tmp_path), recs, {}, lambda _: None, print, tmp_path / "p.json")
    assert calls == []
    for r in recs:
        assert r.timeline["source"] == "nsys"
        assert "cuda_gpu_kern_sum" in r.timeline["reason"]
        names = [k["kernel"] for k in r.timeline["kernels"]]
        assert names[0] == "gemm_bwd_tn_dweight"
        assert r.timeline["kernels"][0]["calls"] == 2  # 10 instances over 5 steps


def test_profile_command_brackets_the_steps_with_the_profiler_api(tmp_path: Path) -> None:
    cmd = timeline.profile_command("nsys", tmp_path / "r", ["python", "-m", "runner.worker"])
    assert cmd[:2] == ["nsys", "profile"]
    assert cmd[cmd.index("--capture-range") + 1] == "cudaProfilerApi"
    assert cmd[cmd.index("--output") + 1] == str(tmp_path / "r")
    assert cmd[-3:] == ["python", "-m", "runner.worker"]
    stats = timeline.stats_command("nsys", tmp_path / "r.nsys-rep")
    assert stats[stats.index("--report") + 1] == "cuda_gpu_kern_sum"


def test_a_timeline_traced_by_the_first_timing_process_is_used_as_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "find_nsys", lambda: None)
    calls: list = []
    cupti_phase(monkeypatch, calls)
    traced = {
        "steps": 5,
        "kernels": kernel_steps.aggregate([("gemm", 0, 50), ("adamw", 60, 70)], 5),
    }
    done, missing = records("train[a]", "train[b]")
    done.timings = [Outcome("ok", result={"samples": [1.0], "timeline": traced})]
    missing.timings = [Outcome("ok", result={"samples": [1.0]})]
    timeline.capture(fake_suite(tmp_path), [done, missing], {}, lambda _: None, print)
    assert done.timeline["kernels"] == traced["kernels"]
    assert "first timing process" in done.timeline["reason"]
    assert calls == [("timeline", ["train[b]"])]  # only the one without a traced timeline
    assert missing.timeline["source"] == "cupti"


# --- CUPTI busy time and the choice of timer (runner.measure.timers, runner.measure.sampling)
# ------------------


def test_busy_time_is_the_union_of_kernel_intervals() -> None:
    assert busy_ns([]) == 0
    assert busy_ns([("a", 100, 200)]) == 100
    # a library's second kernel placed far later by CUPTI counts its own duration only
    assert busy_ns([("gemm", 0, 2976), ("splitKreduce", 4931545, 4933113)]) == 2976 + 1568
    assert busy_ns([("a", 0, 100), ("b", 50, 150), ("c", 120, 130), ("d", 300, 310)]) == 160


def test_the_declared_method_is_the_one_used_or_the_workload_fails() -> None:
    class Timers:
        events = "events"
        cupti_error = "ImportError: no module named cupti"

        def __init__(self, cupti_ok: bool, records: bool = True) -> None:
            self.ok, self.records = cupti_ok, records

        def cupti(self) -> str | None:
            return "cupti" if self.ok else None

        def cupti_works(self, sample) -> bool:
            return self.records

    never = lambda t: 1 / 0  # noqa: E731 - no measurement decides anything
    assert select_timer(Timers(True), "cupti", never) == "cupti"
    assert select_timer(Timers(True), "cuda_events", never) == "events"
    with pytest.raises(TimingMethodUnavailable, match=r"unavailable in this process.*cupti"):
        select_timer(Timers(False), "cupti", never)  # never events in its place
    with pytest.raises(TimingMethodUnavailable, match="recorded no kernel"):
        select_timer(Timers(True, records=False), "cupti", never)
    with pytest.raises(TimingMethodUnavailable, match="GPU suite"):
        select_timer(Timers(True), "host", never)

    class Declared:
        id = "w"
        timing_method = "cupti"

    class Silent:
        id = "s"

    assert workload_method(Declared(), "cuda_events") == "cupti"
    assert workload_method(Silent(), "cuda_events") == "cuda_events"
    Declared.timing_method = "guess"
    with pytest.raises(TimingMethodUnavailable, match="unknown timing method"):
        workload_method(Declared(), "cuda_events")


def test_a_large_spread_is_sampled_longer_than_a_small_settled_one() -> None:
    timing = Timing(min_samples=10, max_samples=1000, max_seconds=100, target_rel_spread=0.005)
    steady = iter([100.0, 101.0, 102.0, 103.0] * 100)  # ~2% spread: settles early
    samples, reason = collect(lambda: next(steady), timing)
    assert len(samples) <= 20 and "settled" in reason
    noisy = iter([100.0, 130.0, 100.0, 160.0] * 100)  # ~40%: interference, sample on
    samples, reason = collect(lambda: next(noisy), timing)
    assert len(samples) >= 30 and "settled" in reason
    tight = iter([100.0, 100.1] * 100)
    samples, reason = collect(lambda: next(tight), timing)
    assert len(samples) == 10 and "<=" in reason

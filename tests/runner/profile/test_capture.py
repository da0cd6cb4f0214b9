"""runner.profile.capture without a GPU: the ncu command, attribution of launches to workloads by
NVTX range, the sections per workload, and the whole pass against fake `ncu` programs."""

from __future__ import annotations

import csv
import io
import json
import stat
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from runner.profile import capture as profile
from runner.profile import ncu, ncu_pass
from runner.suite.load import Timing

PASS = Path(__file__).parents[1] / "fixtures" / "ncu" / "h100_kernelwatch_pass_details.csv"
NVTX_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
IDS = ["gemm[a]", "cublas[b]", "adamw[c]", "gemm[d]"]
# launch ID in the real capture -> workload index (None: launched outside every range)
OWNER = {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: None, 6: None, 7: None, 8: 2}
OWNER.update({i: 3 for i in range(9, 19)})


def nvtx_cell(launch: int) -> str:
    """What ncu --nvtx writes in that column: the thread, then each open push/pop range."""
    index = OWNER.get(launch)
    if index is None:
        return ""
    ranges = [IDS[index], f"{ncu_pass.NVTX_MARK}{index}"]
    quoted = [f'"<default domain>:{r}:none:none:none:none:none:none"' for r in ranges]
    return "1  " + "  ".join(quoted)


def with_nvtx(text: str) -> str:
    """The real details export of the H100 fixture with the NVTX column ncu --nvtx adds."""
    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i, row in enumerate(rows):
        cell = NVTX_COLUMN if i == 0 else (nvtx_cell(int(row[0])) if row and row[0] else "")
        writer.writerow([*row[:4], cell, *row[4:]] if row else row)
    return "==PROF== Connected to process 468\n" + out.getvalue()


@pytest.fixture(scope="module")
def export() -> str:
    return with_nvtx(PASS.read_text())


def test_one_bounded_pass_over_a_profile_worker(tmp_path: Path) -> None:
    cmd = ncu_pass.profile_command("/opt/ncu", tmp_path / "w.json", tmp_path / "rep", 3)
    assert cmd[:2] == ["/opt/ncu", "--nvtx"]
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--launch-count") + 1] == str(3 * ncu_pass.LAUNCHES_PER_WORKLOAD)
    assert cmd[cmd.index("-o") + 1] == str(tmp_path / "rep")
    assert cmd[cmd.index("--metrics") + 1] == ",".join(ncu.METRICS)
    assert cmd[-3:] == ["-m", "runner.worker", str(tmp_path / "w.json")]
    suite = SimpleNamespace(root=tmp_path, workloads="m", check=None, device="cuda")
    config = ncu_pass.worker_config(suite, IDS)
    assert config["mode"] == "profile" and config["ids"] == IDS


def test_inputs_drawn_on_the_gpu_are_left_out_of_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cmd = ncu_pass.profile_command("/opt/ncu", tmp_path / "w.json", tmp_path / "rep", 3)
    # push/pop range at the top of the stack: ncu's "Range]" form
    assert cmd[cmd.index("--nvtx-exclude") + 1] == f"{ncu_pass.INPUTS_RANGE}]"
    gpu = SimpleNamespace(root=tmp_path, workloads="m", check=None, device="cuda")
    cpu = SimpleNamespace(root=tmp_path, workloads="m", check=None, device="cpu")
    monkeypatch.delenv("KERNELWATCH_TIMING_INPUTS", raising=False)
    assert ncu_pass.worker_config(gpu, IDS)["inputs"] == "device"
    assert ncu_pass.worker_config(cpu, IDS)["inputs"] is None
    monkeypatch.setenv("KERNELWATCH_TIMING_INPUTS", "host")
    assert ncu_pass.worker_config(gpu, IDS)["inputs"] == "host"


def test_launches_are_attributed_to_the_innermost_kernelwatch_range(export: str) -> None:
    ranges = ncu_pass.launch_ranges(export)
    assert ranges == {k: v for k, v in OWNER.items() if v is not None}
    groups, stray = ncu_pass.attribute(ncu.parse_csv(export), ranges, len(IDS))
    assert [len(g) for g in groups] == [3, 2, 1, 10]
    assert stray == 3
    assert {launch["kernel"] for launch in groups[2]} == {"adamw"}


def test_sections_hold_the_fixed_metrics_and_findings_per_workload(export: str) -> None:
    out = ncu_pass.sections(IDS, export, "", "ok", "")
    assert list(out) == IDS
    gemm = out["gemm[a]"]
    assert gemm["status"] == "ok"
    [kernel] = gemm["kernels"]
    assert kernel["kernel"] == "gemm_bias_relu"
    # This export predates issue 15's counters: the set's first 13 names, nothing outside it.
    assert set(list(ncu.METRICS)[:13]) <= set(kernel["metrics"]) <= set(ncu.METRICS)
    assert kernel["findings"] and all("rule" in f for f in kernel["findings"])
    cublas = out["cublas[b]"]["kernels"][0]
    assert cublas["kernel"].startswith("sm80_xmma_gemm_f32f32")


def test_a_workload_that_raised_or_launched_nothing_is_failed(export: str) -> None:
    ids = [*IDS, "broken[e]", "copies[f]"]
    output = '{"event": "error", "id": "broken[e]", "error": "Traceback: ValueError: boom"}\n'
    output += '{"event": "result", "id": "copies[f]", "result": {"nvtx": true}}\n'
    out = ncu_pass.sections(ids, export, output, "ok", "")
    assert out["broken[e]"]["status"] == "failed" and "boom" in out["broken[e]"]["reason"]
    assert out["copies[f]"]["status"] == "failed"
    assert "no kernel launch" in out["copies[f]"]["reason"]
    assert out["gemm[d]"]["status"] == "ok"


def test_without_nvtx_in_the_worker_the_reason_says_so() -> None:
    output = '{"event": "result", "id": "gemm[a]", "result": {"nvtx": false}}\n'
    out = ncu_pass.sections(["gemm[a]"], "", output, "ok", "")
    assert "NVTX" in out["gemm[a]"]["reason"]


def fake_ncu(tmp_path: Path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def suite_for(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(
        root=tmp_path, workloads="m", check=None, device="cuda",
        timing=Timing(timeout_seconds=5), wants_timeline=lambda info: False,
    )  # fmt: skip


def one_pass(tmp_path: Path, ids: list[str], log, stop=lambda: None) -> dict:
    """One ncu pass started and finished at once, over the workloads `ids`."""
    started = ncu_pass.NcuPass(suite_for(tmp_path), len(ids), {}, ids=ids)
    return started.finish(ids, log, stop)


def test_refused_counters_make_every_section_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"\nexit 1\n'
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    lines: list[str] = []
    out = one_pass(tmp_path, IDS[:2], lines.append)
    for section in out.values():
        assert section["status"] == "unavailable"
        assert "ERR_NVGPUCTRPERM" in section["reason"] and section["kernels"] == []
    assert any("unavailable" in line for line in lines)


def test_missing_ncu_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELWATCH_NCU", str(tmp_path / "no-such-ncu"))
    out = one_pass(tmp_path, IDS[:1], print)
    assert out["gemm[a]"]["status"] == "unavailable"
    assert "not found" in out["gemm[a]"]["reason"]


def test_the_whole_pass_against_a_fake_ncu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str
) -> None:
    (tmp_path / "export.csv").write_text(export)
    body = f"""\
case "$*" in
*--import*) cat "{tmp_path / "export.csv"}";;
*) while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
   touch "$out.ncu-rep"
   echo '==PROF== Disconnected from process 1';;
esac
"""
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    stages: list[tuple[str, int | None]] = []
    advanced: list[str] = []
    progress = SimpleNamespace(
        stage=lambda name, total=None: stages.append((name, total)),
        advance=lambda label, outcome=None: advanced.append(label),
    )
    recs = [SimpleNamespace(info={"id": wid, "tags": []}, ncu=None, timeline=None) for wid in IDS]
    lines: list[str] = []
    profiling = profile.Profiling(suite_for(tmp_path), [r.info for r in recs], {}, start=False)
    profiling.capture(recs, progress, lines.append, lambda: None)
    assert stages == [("ncu", len(IDS))]
    assert advanced == IDS
    assert all(r.ncu["status"] == "ok" for r in recs)
    assert recs[3].ncu["kernels"][0]["metrics"]["launch__registers_per_thread"]["value"] > 0
    assert any(line.startswith("ncu: 4 ok") for line in lines)


def test_a_stop_request_kills_the_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, "sleep 30\n"))

    def stop() -> None:
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        one_pass(tmp_path, IDS[:1], print, stop)


# Two rows of a real export of this pass (H100, ncu 2025.3.1, --nvtx), 2026-11: the NVTX
# column holds the thread id, then every open range, the worker's own (the workload id) first.
REAL = (
    '"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:P'
    'L_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Id:Domain:Start/Stop_Range:PL_'
    'Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric '
    'Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated S'
    'peedup Type","Estimated Speedup"\n'
    '"8","739","python3.12","127.0.0.1","739  ""<default domain>:cublas_gemm[k=16'
    ',m=32,n=64]:none:none:none:none:none:none""  ""<default domain>:kernelwatch#'
    '5:none:none:none:none:none:none"" ","","void cublasLt::splitKreduce_kernel<3'
    "2, 16, int, float, float, float, float, 0, float, float, float, 1, 0, 0, 0>("
    "cublasLt::cublasSplitKParams<T6>, const T4 *, const T10 *, T9 *, T5 *, const"
    " T6 *, const T6 *, const T11 *, const T4 *, T11 *, void *, long, T6 *, int *"
    ', T6 *, T6 *, const T6 *, const T6 *, const T6 *, const T6 *, const T6 *)","'
    '1","7","(32, 16, 1)","(2, 2, 1)","0","9.0","Command line profiler metrics","'
    'gpu__time_duration.sum","ns","3,072",\n'
    '"19","739","python3.12","127.0.0.1","739  ""<default domain>:train_step[batc'
    "h=256,d_hidden=4096,d_in=1024,d_out=1024,p_drop=0.1]:none:none:none:none:non"
    'e:none""  ""<default domain>:kernelwatch#7:none:none:none:none:none:none"" "'
    ',"","adamw_multi","1","7","(256, 1, 1)","(2050, 1, 1)","0","9.0","Command li'
    'ne profiler metrics","gpu__time_duration.sum","ns","78,624",\n'
)


def test_a_real_export_attributes_by_the_kernelwatch_range() -> None:
    assert ncu_pass.launch_ranges(REAL) == {8: 5, 19: 7}
    launches = ncu.parse_csv(REAL)
    assert [launch["id"] for launch in launches] == [8, 19]
    groups, stray = ncu_pass.attribute(launches, ncu_pass.launch_ranges(REAL), 8)
    assert stray == 0 and groups[5][0]["kernel"].startswith("void cublasLt::splitKreduce")
    assert groups[7][0]["metrics"]["gpu__time_duration.sum"]["value"] == 78624


QUIET = SimpleNamespace(stage=lambda *a, **k: None, advance=lambda *a, **k: None)
HOST = {"fingerprint": "f", "gpu": {"uuid": "GPU-1"}}  # the environment section's host


def suite_repository(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository of one commit (the suite's code) and an empty build folder."""
    repo, build = tmp_path / "repo", tmp_path / "build"
    build.mkdir()
    repo.mkdir()
    (repo / "workloads.py").write_text("N = 1\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "c"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo, build


def exporting_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str) -> Path:
    """A fake ncu that writes a report and exports `export`; each call's arguments are a line
    of the file returned."""
    (tmp_path / "export.csv").write_text(export)
    calls = tmp_path / "calls"
    body = f"""\
echo "$*" >> "{calls}"
case "$*" in
*--import*) cat "{tmp_path / "export.csv"}";;
*) while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
   touch "$out.ncu-rep";;
esac
"""
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    return calls


def test_a_second_commit_with_the_same_code_reuses_every_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str
) -> None:
    from runner.profile.reuse import ProfileReuse

    calls = exporting_ncu(tmp_path, monkeypatch, export)
    repo, build = suite_repository(tmp_path)
    runs = []
    for _ in range(2):
        recs = [SimpleNamespace(info={"id": w, "tags": []}, ncu=None, timeline=None) for w in IDS]
        lines: list[str] = []
        reuse = ProfileReuse(tmp_path / "cache", repo, build, "a" * 40, HOST, {})
        profiling = profile.Profiling(suite_for(tmp_path), [r.info for r in recs], {}, reuse,
                                      start=False)  # fmt: skip
        profiling.capture(recs, QUIET, lines.append, lambda: None)
        passes = [ln for ln in calls.read_text().splitlines() if "--import" not in ln]
        runs.append((recs, lines, len(passes)))
    (first, first_lines, passes_1), (second, second_lines, passes_2) = runs
    assert passes_1 == passes_2 == 1  # the second run started no ncu pass
    assert any("4 ok, 0 failed of 4 workloads profiled, 0 reused" in ln for ln in first_lines)
    assert any("of 0 workloads profiled, 4 reused" in ln for ln in second_lines)
    for a, b in zip(first, second, strict=True):
        assert b.ncu["kernels"] == a.ncu["kernels"] and b.ncu["status"] == "ok"
        assert b.ncu["reason"].startswith("reused: profiled at commit aaaaaaaaaaaa")
        # One measurement, seen twice: the service must not learn a counter's noise from it.
        assert {k["profiled_at"] for k in b.ncu["kernels"]} == {"a" * 40}
        assert all(len(k["determinants"]) == 64 for k in b.ncu["kernels"])


def export_of(owner: dict[int, int], ids: list[str]) -> str:
    """The real export's launches in `owner` (launch ID -> index in `ids`), attributed so."""
    rows = list(csv.reader(io.StringIO(PASS.read_text())))
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([*rows[0][:4], NVTX_COLUMN, *rows[0][4:]])
    for row in rows[1:]:
        if row and row[0] and int(row[0]) in owner:
            mark = f'"<default domain>:{ncu_pass.NVTX_MARK}{owner[int(row[0])]}:none:none"'
            writer.writerow([*row[:4], f"1  {mark}", *row[4:]])
    return out.getvalue()


def test_only_the_changed_kernels_are_profiled_and_merged_with_the_earlier_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.profile.reuse import ProfileReuse

    ids = ["mix[a]", "gemm[d]"]  # mix[a]: gemm_bias_relu and adamw; gemm[d]: gemm_bias_relu
    exports = [
        export_of({0: 0, 1: 0, 2: 0, 8: 0, **{i: 1 for i in range(9, 19)}}, ids),  # 1st commit
        export_of({0: 0}, ids),  # 2nd commit, filtered: gemm[d]'s launch is missed
        export_of({i: 0 for i in range(9, 19)}, ["gemm[d]"]),  # ... so it is profiled whole
    ]
    for n, text in enumerate(exports, 1):
        (tmp_path / f"export-{n}.csv").write_text(text)
    body = f"""\
cd "{tmp_path}"
case "$1" in
--import) cat "$2";;
*) n=$(( $(cat count 2>/dev/null || echo 0) + 1 )); echo $n > count; echo "$*" >> calls
   while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
   cp "export-$n.csv" "$out.ncu-rep";;
esac
"""
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    repo, build = suite_repository(tmp_path)
    runs = []
    for commit, gemm_code in (("a" * 40, "v1"), ("b" * 40, "v2")):
        (build / "g.ptx").write_text(f".version 8.0\n.target sm_90\ngemm_bias_relu {gemm_code}")
        (build / "a.ptx").write_text(".version 8.0\n.target sm_90\nadamw")
        recs = [SimpleNamespace(info={"id": w, "tags": []}, ncu=None, timeline=None) for w in ids]
        lines: list[str] = []
        reuse = ProfileReuse(tmp_path / "cache", repo, build, commit, HOST, {})
        profiling = profile.Profiling(suite_for(tmp_path), [r.info for r in recs], {}, reuse,
                                      start=False)  # fmt: skip
        profiling.capture(recs, QUIET, lines.append, lambda: None)
        runs.append((recs, lines))
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 3 and "--kernel-name" not in calls[0] and "--kernel-name" not in calls[2]
    assert "--kernel-name regex:(^|::)(gemm_bias_relu)(<|$)" in calls[1]
    (first, _), (second, lines) = runs
    mix_before = {k["kernel"]: k for k in first[0].ncu["kernels"]}
    mix_after = {k["kernel"]: k for k in second[0].ncu["kernels"]}
    assert list(mix_after) == list(mix_before) == ["gemm_bias_relu", "adamw"]
    assert mix_after["adamw"] == mix_before["adamw"]
    # Each entry says where its counters were measured and what determined them: adamw's code
    # did not change (the same key, measured at the first commit), gemm_bias_relu's did.
    assert mix_after["adamw"]["profiled_at"] == "a" * 40
    assert mix_after["gemm_bias_relu"]["profiled_at"] == "b" * 40
    gemm_keys = {
        k["determinants"] for k in (mix_before["gemm_bias_relu"], mix_after["gemm_bias_relu"])
    }
    assert len(gemm_keys) == 2
    assert second[0].ncu["reason"].startswith("profiled at this commit: gemm_bias_relu")
    assert "reused from commit aaaaaaaaaaaa" in second[0].ncu["reason"]
    assert second[1].ncu["status"] == "ok" and second[1].ncu["reason"] == ""
    assert [k["kernel"] for k in second[1].ncu["kernels"]] == ["gemm_bias_relu"]
    assert any("2 workloads profiled (2 of them only their changed kernels)" in ln for ln in lines)
    assert any("were not profiled by the filtered pass" in ln for ln in lines)


def test_the_kernel_filter_matches_function_names_or_gives_up() -> None:
    pattern = profile.kernel_filter(["void ns::gemm<128>(float *)", "adamw", "adamw"])
    assert pattern == "(^|::)(adamw|gemm)(<|$)"
    assert profile.kernel_filter(["void ns::operator+<int>(int)"]) is None
    assert profile.kernel_filter([]) is None


def test_a_pass_started_ahead_gets_its_ids_on_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str
) -> None:
    (tmp_path / "export.csv").write_text(export)
    body = f"""\
case "$1" in
--import) cat "{tmp_path / "export.csv"}";;
*) echo "$*" > "{tmp_path / "args"}"; cat > "{tmp_path / "stdin"}"
   while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
   touch "$out.ncu-rep";;
esac
"""
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    started = ncu_pass.NcuPass(suite_for(tmp_path), 5, {}, kernel_regex="(^|::)(adamw)(<|$)")
    time.sleep(0.3)
    assert started.proc is not None and started.proc.poll() is None  # waiting for its ids
    config_path = Path(started.proc.args[-1])
    assert json.loads(config_path.read_text())["wait"] is True
    out = started.finish(IDS, print)
    assert json.loads((tmp_path / "stdin").read_text()) == {"ids": IDS}
    args = (tmp_path / "args").read_text()
    assert f"regex:(^|::)({ncu_pass.WARM_UP_KERNEL}|adamw)(<|$)" in args  # profiled too
    assert f"--launch-count {6 * ncu_pass.LAUNCHES_PER_WORKLOAD}" in args  # and the warm-up
    assert [s["status"] for s in out.values()] == ["ok"] * 4
    assert not config_path.exists()  # its folder is gone


def test_a_pass_started_ahead_and_never_used_is_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, "sleep 30\n"))
    profiling = profile.Profiling(suite_for(tmp_path), [{"id": w} for w in IDS], {})
    assert profiling.started is not None and profiling.planned == IDS
    proc = profiling.started.proc
    with profiling:
        pass  # the run stopped before correctness ended
    assert proc is not None and proc.wait(timeout=5) != 0 and profiling.started is None


def test_the_workers_imports_come_from_its_done_line() -> None:
    output = "==PROF== x\n" + json.dumps({"event": "done", "files": ["a.py", "k/w.py"]}) + "\n"
    assert ncu_pass.worker_imports(output) == ["a.py", "k/w.py"]
    assert ncu_pass.worker_imports('{"event": "result", "id": "a"}\n') is None
    assert ncu_pass.worker_imports('{"event": "done", "files": 3}\n') is None


def test_the_worker_names_the_python_files_it_imported_from_the_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from runner.worker.process import imported_files

    (tmp_path / "kwpkg").mkdir()
    (tmp_path / "kwpkg" / "__init__.py").write_text("")
    (tmp_path / "kwpkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import kwpkg.mod  # noqa: F401

    try:
        assert imported_files(str(tmp_path)) == ["kwpkg/__init__.py", "kwpkg/mod.py"]
    finally:
        sys.modules.pop("kwpkg.mod", None)
        sys.modules.pop("kwpkg", None)


def test_without_reuse_every_entry_is_measured_at_its_commit_under_the_same_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KERNELWATCH_NCU_REUSE=0: every commit profiles again, and the entries of unchanged code
    carry equal determinants, each measured at its own commit (two measurements to learn a
    counter's noise from)."""
    from runner.profile.capture import reuse_for

    monkeypatch.setenv("KERNELWATCH_NCU_REUSE", "0")
    (tmp_path / "export.csv").write_text(export_of({i: 0 for i in range(9, 19)}, ["gemm[d]"]))
    body = f"""\
case "$*" in
*--import*) cat "{tmp_path / "export.csv"}";;
*) echo pass >> "{tmp_path / "calls"}"
   while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
   touch "$out.ncu-rep";;
esac
"""
    monkeypatch.setenv("KERNELWATCH_NCU", fake_ncu(tmp_path, body))
    repo, build = suite_repository(tmp_path)
    entries = []
    for commit in ("a" * 40, "b" * 40):
        rec = SimpleNamespace(info={"id": "gemm[d]", "tags": []}, ncu=None, timeline=None)
        reuse = reuse_for(tmp_path / "cache", repo, build, commit, HOST)
        profiling = profile.Profiling(suite_for(tmp_path), [rec.info], {}, reuse, start=False)
        profiling.capture([rec], QUIET, lambda line: None, lambda: None)
        (entry,) = rec.ncu["kernels"]
        entries.append(entry)
    assert (tmp_path / "calls").read_text().count("pass") == 2  # nothing reused
    assert [e["profiled_at"] for e in entries] == ["a" * 40, "b" * 40]
    assert entries[0]["determinants"] == entries[1]["determinants"]
    assert not (tmp_path / "cache" / "ncu-profiles").exists()  # nothing kept either


def signature_of(wid: str, checksum: str = "d1") -> dict:
    """A check worker's signature of workload `wid` (runner.worker.launch_record)."""
    return {"kernels": [{"kernel": f"k_{wid}", "grid": [8, 1, 1], "block": [128, 1, 1],
                         "dynamic_shared": 0, "static_shared": 0, "registers": 20}],
            "code": {f"k_{wid}": "c"}, "written": {},
            "inputs": {"x": {"shape": [4], "dtype": "float32", "sha256": checksum}},
            "scalars": {}, "launch_code": "l"}  # fmt: skip


def test_a_commit_that_changed_python_only_reuses_every_launch_with_its_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str
) -> None:
    """The module every workload imports is edited at each commit: by the files every section
    is stale, by the launches' signatures none is, but the one whose inputs changed."""
    from runner.profile.reuse import ProfileReuse

    calls = exporting_ncu(tmp_path, monkeypatch, export)
    repo, build = suite_repository(tmp_path)
    runs, relaunched = [], []
    for n, checksums in enumerate(({}, {}, {"adamw[c]": "d2"})):
        (repo / "workloads.py").write_text(f"N = {n}  # every workload imports this\n")
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam",
                        f"c{n}"], cwd=repo, check=True, capture_output=True)  # fmt: skip
        recs = [SimpleNamespace(info={"id": w, "tags": []}, ncu=None, timeline=None,
                                signature=signature_of(w, checksums.get(w, "d1")))
                for w in IDS]  # fmt: skip
        lines: list[str] = []
        reuse = ProfileReuse(tmp_path / "cache", repo, build, f"{n}" * 40, HOST, {})
        profiling = profile.Profiling(suite_for(tmp_path), [r.info for r in recs], {}, reuse,
                                      start=False)  # fmt: skip
        assert profiling.planned == IDS  # by the commit's files, every section is stale
        profiling.capture(recs, QUIET, lines.append, lambda: None)
        passes = [ln for ln in calls.read_text().splitlines() if "--import" not in ln]
        runs.append((recs, lines, len(passes)))
        relaunched.append(profiling.relaunched)
    (first, _, passes_1), (second, lines_2, passes_2), (third, lines_3, passes_3) = runs
    # What the run then times against its base: the one launch that changed, not the first
    # commit's (nothing to compare with) nor the ones whose files alone changed.
    assert relaunched == [{}, {}, {"adamw[c]": "the inputs"}]
    assert (passes_1, passes_2) == (1, 1)  # the second commit started no ncu pass
    assert any("of 0 workloads profiled, 4 reused (unchanged since an earlier commit, 4 of "
               "them by their launch)" in ln for ln in lines_2)  # fmt: skip
    for a, b in zip(first, second, strict=True):
        assert b.ncu["kernels"] == a.ncu["kernels"]
        assert b.ncu["reason"].startswith("reused: profiled at commit 000000000000")
    assert passes_3 == 2  # one more pass, for the workload whose inputs changed
    assert any("profiling adamw[c] (the inputs)" in ln for ln in lines_3)
    assert any("of 1 workloads profiled, 3 reused" in ln for ln in lines_3)
    profiled = {r.info["id"]: r.ncu["kernels"][0]["profiled_at"] for r in third}
    assert profiled == {"gemm[a]": "0" * 40, "cublas[b]": "0" * 40, "adamw[c]": "2" * 40,
                        "gemm[d]": "0" * 40}  # fmt: skip


def test_a_launch_that_ran_no_kernel_is_not_handed_to_ncu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export: str
) -> None:
    """Its check saw copies alone (a contiguous copy_ is a cudaMemcpy): ncu profiles kernels,
    so the pass leaves it out, and its section says why instead of failing."""
    calls = exporting_ncu(tmp_path, monkeypatch, export)
    copies = {"unavailable": "the launch ran no kernel, only 32 memory copies or sets: nothing "
              "for ncu to profile", "no_kernel": True}  # fmt: skip
    for idle in (["cublas[b]"], IDS):
        calls.unlink(missing_ok=True)
        recs = [SimpleNamespace(info={"id": w, "tags": []}, ncu=None, timeline=None,
                                signature=copies if w in idle else signature_of(w))
                for w in IDS]  # fmt: skip
        lines: list[str] = []
        profiling = profile.Profiling(suite_for(tmp_path), [r.info for r in recs], {},
                                      start=False)  # fmt: skip
        profiling.capture(recs, QUIET, lines.append, lambda: None)
        by_id = {r.info["id"]: r.ncu for r in recs}
        for wid in idle:
            assert by_id[wid]["status"] == "unavailable" and by_id[wid]["kernels"] == []
            assert by_id[wid]["reason"].startswith("the launch ran no kernel, only 32")
        said = f"of {len(IDS) - len(idle)} workloads profiled, 0 reused (unchanged since an " \
            f"earlier commit), {len(idle)} not (their launch ran no kernel)"  # fmt: skip
        assert any(said in ln for ln in lines), lines
        passes = [ln for ln in calls.read_text().splitlines() if "--import" not in ln] \
            if calls.exists() else []  # fmt: skip
        assert len(passes) == (0 if idle == IDS else 1)

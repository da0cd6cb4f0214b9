"""runner.profile.ncu_pass without a GPU: the one bounded ncu pass and its profile worker. The
pass's command and launch budget, each launch attributed to its workload by the innermost
kernelwatch#<index> NVTX range, the worker's messages and imports among ncu's output, each
workload's section (its launches, else why not: failed under ncu, ncu unavailable, no NVTX, the
budget used up, nothing launched), a pass without ncu, and the launcher: where each workload's
inputs are drawn, and in which range.

For the launcher CuPy is replaced by a stand-in that records nothing but synchronizations: what
is tested there is the launcher's own order of ranges and threads
(tests/runner/profile/test_ncu_pass_gpu.py runs it on a GPU). The pass itself against fake
`ncu` programs is in test_capture.py."""

from __future__ import annotations

import csv
import io
import sys
import threading
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from runner.profile import ncu_pass
from runner.profile.ncu_pass import INPUTS_RANGE, LAUNCHES_PER_WORKLOAD, Launcher, NcuPass
from runner.suite.load import Timing

NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def export(*launches: tuple[int, str, list[str]], nvtx_column: bool = True) -> str:
    """A details export of `(launch id, kernel, open ranges)`, as `ncu --nvtx` writes it."""
    out = io.StringIO()
    rows = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    columns = [
        "ID",
        "Process ID",
        "Kernel Name",
        *([NVTX] if nvtx_column else []),
        "Section Name",
        "Metric Name",
        "Metric Unit",
        "Metric Value",
    ]
    rows.writerow(columns)
    for launch, kernel, ranges in launches:
        cell = "1  " + "  ".join(f'"<default domain>:{r}:none:none"' for r in ranges)
        rows.writerow(
            [
                str(launch),
                "42",
                kernel,
                *([cell] if nvtx_column else []),
                "Command line profiler metrics",
                "gpu__time_duration.sum",
                "ns",
                "1,024",
            ]
        )
    return "==PROF== Connected to process 42\n" + out.getvalue() + "==PROF== Disconnected\n"


def test_the_budget_is_per_workload_and_the_kernel_filter_goes_to_ncu(tmp_path: Path) -> None:
    cmd = ncu_pass.profile_command(
        "/opt/ncu", tmp_path / "w.json", tmp_path / "rep", 0, kernel_regex="(^|::)(gemm)(<|$)"
    )
    assert cmd[cmd.index("--launch-count") + 1] == str(LAUNCHES_PER_WORKLOAD)  # at least one
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:(^|::)(gemm)(<|$)"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == list(ncu_pass.SECTIONS)


def test_a_launch_belongs_to_the_innermost_kernelwatch_range() -> None:
    text = export(
        (0, "gemm", ["gemm[n=1]", "kernelwatch#0"]),
        (1, "warm", []),  # the worker's warm-up kernel, outside every range
        (2, "inner", ["kernelwatch#1", "library", "kernelwatch#2"]),
        (3, "other", ["kernelwatch-inputs"]),  # no index: not a workload's range
    )
    assert ncu_pass.launch_ranges(text) == {0: 0, 2: 2}


def test_without_a_range_column_the_marks_are_found_in_any_cell() -> None:
    text = export((5, "kernelwatch#3_named", []), nvtx_column=False)
    assert ncu_pass.launch_ranges(text) == {5: 3}
    assert ncu_pass.launch_ranges("==PROF== no header\nprogram output\n") == {}
    units = export((7, "gemm", ["kernelwatch#0"])).replace('"7"', '""')  # no launch id
    assert ncu_pass.launch_ranges(units) == {}


def test_a_launch_outside_every_workload_of_the_pass_is_stray() -> None:
    launches = [{"id": 0}, {"id": 1}, {"id": "2"}, {"id": 3}, {"id": 4}]
    ranges = {0: 1, 1: 0, 2: 0, 3: 2, 4: -1}
    groups, stray = ncu_pass.attribute(launches, ranges, 2)
    assert groups == [[{"id": 1}], [{"id": 0}]]
    assert stray == 3  # an id ncu did not print as a number, a third workload, a negative one


def test_the_workers_own_lines_are_picked_out_of_ncus_output() -> None:
    output = "\n".join(
        [
            "==PROF== Connected to process 42",
            '{"event": "result", "id": "a", "result": {"nvtx": true}}',
            '{"event": "error", "id": "b", "error": "first"}',
            '{"event": "error", "id": "b", "error": "second"}',
            '{"event": "result", "id": "c", broken json',
            '{"event": "started", "id": "d"}',
            '  {"event": "result", "id": "e"}',
            '{"event": "done", "files": ["old.py"]}',
            '{"event": "done", "files": ["k/a.py", "k/b.py"]}',
        ]
    )
    messages = ncu_pass.worker_messages(output)
    assert sorted(messages) == ["a", "b"]
    assert messages["b"]["error"] == "second"
    assert ncu_pass.worker_imports(output) == ["k/a.py", "k/b.py"]  # the last done line
    assert ncu_pass.worker_imports('{"event": "done", broken\n') is None


def test_a_workload_that_raised_is_failed_even_when_ncu_was_unavailable() -> None:
    output = '{"event": "error", "id": "b", "error": "ValueError: boom"}\n'
    out = ncu_pass.sections(["a", "b"], "", output, "unavailable", "ERR_NVGPUCTRPERM")
    assert out["a"] == {"status": "unavailable", "reason": "ERR_NVGPUCTRPERM", "kernels": []}
    assert out["b"]["status"] == "failed"
    assert out["b"]["reason"] == "the workload failed under ncu: ValueError: boom"


@pytest.mark.parametrize(
    ("launches", "reason"),
    [
        (
            2 * LAUNCHES_PER_WORKLOAD,
            f"not profiled: the pass's launch budget ({2 * LAUNCHES_PER_WORKLOAD}) was used up "
            "before it",
        ),
        (2 * LAUNCHES_PER_WORKLOAD - 1, "no kernel launch of this workload was profiled"),
    ],
    ids=["budget-used-up", "one-launch-to-spare"],
)
def test_a_workload_after_a_pass_that_used_its_budget_says_so(launches: int, reason: str) -> None:
    text = export(*((i, "gemm", ["kernelwatch#0"]) for i in range(launches)))
    out = ncu_pass.sections(["first", "second"], text, "", "ok", "")
    assert out["first"]["status"] == "ok"
    assert [k["kernel"] for k in out["first"]["kernels"]] == ["gemm"]
    assert out["second"] == {"status": "failed", "reason": reason, "kernels": []}


def test_a_pass_without_ncu_has_its_time_limit_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELWATCH_NCU", str(tmp_path / "no-ncu-here"))
    suite = SimpleNamespace(root=tmp_path, timing=Timing(timeout_seconds=30))
    started = NcuPass(suite, 4, {})
    assert started.proc is None
    assert started.limit == 2 * 30 + 10 * 4  # each workload's timeout twice, 10 s a workload
    with NcuPass(suite, 0, {}) as empty:
        assert empty.limit == 70
    lines: list[str] = []
    out = started.finish(["a"], lines.append)
    assert out["a"]["status"] == "unavailable" and "not found" in out["a"]["reason"]
    assert not started.tmp.exists()
    started.close()  # twice is fine


class _Ranges:
    """NVTX's push/pop ranges: a stack for each thread, as NVTX keeps them."""

    available = True

    def __init__(self) -> None:
        self._local = threading.local()
        self.seen: list[str] = []

    @property
    def stack(self) -> list[str]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def push(self, name: str) -> None:
        self.stack.append(name)
        self.seen.append(name)

    def pop(self) -> None:
        self.stack.pop()


class _Instance:
    def __init__(self, log: list[tuple[str, Any]], ranges: _Ranges, name: str) -> None:
        self.log, self.ranges, self.name = log, ranges, name

    def launch(self) -> None:
        self.log.append(("launch", self.name, tuple(self.ranges.stack)))

    def close(self) -> None:
        self.log.append(("close", self.name, ()))


class _Workload:
    """Draws its inputs where it is asked to (the suite protocol's `inputs` keyword)."""

    def __init__(self, name: str, log: list, ranges: _Ranges) -> None:
        self.name, self.log, self.ranges = name, log, ranges

    def prepare(self, seed: int, inputs: str = "host") -> _Instance:
        where = (inputs, threading.current_thread() is threading.main_thread())
        self.log.append(("prepare", self.name, (*where, tuple(self.ranges.stack))))
        return _Instance(self.log, self.ranges, self.name)


class _HostOnly(_Workload):
    """A suite whose prepare knows no `inputs`: drawn on the host, on a prefetch thread."""

    def prepare(self, seed: int) -> _Instance:  # type: ignore[override]
        return super().prepare(seed, "host")


@pytest.fixture
def cupy_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    device = SimpleNamespace(synchronize=lambda: None)
    cupy = ModuleType("cupy")
    cupy.cuda = SimpleNamespace(  # type: ignore[attr-defined]
        set_pinned_memory_allocator=lambda allocator: None, Device=lambda: device
    )
    cupy.get_default_memory_pool = lambda: SimpleNamespace(free_all_blocks=lambda: None)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)


def test_gpu_inputs_are_drawn_just_before_their_launch_inside_the_excluded_range(
    cupy_stand_in: None,
) -> None:
    log: list[tuple[str, Any]] = []
    ranges = _Ranges()
    workloads = [_Workload("a", log, ranges), _HostOnly("b", log, ranges),
                 _Workload("c", log, ranges)]  # fmt: skip
    launcher = Launcher(workloads, 0, ranges, "device")
    for index, w in enumerate(workloads):
        assert launcher(w, index) == {"nvtx": True}
    prepared = {name: where for kind, name, where in log if kind == "prepare"}
    # on the GPU: asked for device inputs, on the worker's thread, in the range ncu leaves out
    assert prepared["a"] == ("device", True, (INPUTS_RANGE,))
    assert prepared["c"] == ("device", True, (INPUTS_RANGE,))
    # on the host: ahead, on a thread of its own, in the range ncu leaves out there too (a
    # torch.compile'd workload compiles and launches in prepare)
    assert prepared["b"] == ("host", False, (INPUTS_RANGE,))
    launches = [(name, stack) for kind, name, stack in log if kind == "launch"]
    assert launches == [("a", ("kernelwatch#0",)), ("b", ("kernelwatch#1",)),
                        ("c", ("kernelwatch#2",))]  # fmt: skip
    order = [(kind, name) for kind, name, _ in log if kind != "close"]
    # a GPU workload's inputs come after the launch before it (nothing of it held meanwhile)
    assert order.index(("prepare", "c")) > order.index(("launch", "b"))
    assert ranges.stack == []


def test_host_inputs_are_drawn_ahead_on_threads(cupy_stand_in: None) -> None:
    log: list[tuple[str, Any]] = []
    ranges = _Ranges()
    workloads = [_Workload(name, log, ranges) for name in "abc"]
    launcher = Launcher(workloads, 0, ranges, "host")
    for index, w in enumerate(workloads):
        launcher(w, index)
    prepared = [where for kind, _, where in log if kind == "prepare"]
    assert prepared == [("host", False, (INPUTS_RANGE,))] * 3
    launches = [stack for kind, _, stack in log if kind == "launch"]
    assert launches == [("kernelwatch#0",), ("kernelwatch#1",), ("kernelwatch#2",)]

"""runner.measure.timers: how one launch is timed. Host clocks for CPU suites, the launch alone
and in microseconds; on a GPU, a cold L2 (a flush buffer of max(2 x L2, 128 MiB) written just
before), CUDA events behind a blocking kernel that a launch which synchronizes makes it give up,
and CUPTI's kernel records (the runner's own kernels left out, the union of the intervals).

CuPy and cupti-python are stood in for by modules that log what is asked of them and answer as
the GPU would (a mapped host flag the blocking kernel sets when the host took too long, kernel
records delivered at a flush): what is tested is the timers' order of calls and their decisions,
not CUDA. L2Flush's ring, local-memory relocation and the filler are tested in
test_placements.py."""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from runner.measure import timers
from runner.measure.timers import (
    ACTIVITY_BUFFER_BYTES,
    MIN_FLUSH_BYTES,
    CudaEventTimer,
    CuptiTimer,
    GpuTimers,
    HostTimer,
    HostTimers,
    KernelActivity,
    L2Flush,
    busy_ns,
)

KERNEL = 7  # the stand-in CUPTI's CONCURRENT_KERNEL activity kind


class Cupy(ModuleType):
    """What the timers call of CuPy, on a GPU with `l2` bytes of L2 cache."""

    uint8 = "uint8"

    def __init__(self, l2: int = 50 << 20) -> None:
        super().__init__("cupy")
        self.log: list[Any] = []
        self.host_took_too_long = False  # what the blocking kernel finds while it spins
        self.flags = (ctypes.c_int * 2)()
        self.buffers = 0
        log = self.log
        runtime = SimpleNamespace(
            getDeviceProperties=lambda device: {"l2CacheSize": l2},
            memsetAsync=lambda ptr, value, nbytes, stream: log.append(("memset", ptr, nbytes)),
            hostAlloc=lambda nbytes, flags: ctypes.addressof(self.flags),
            hostAllocMapped=2,
        )
        device = SimpleNamespace(id=0, synchronize=lambda: log.append("device sync"))
        self.cuda = SimpleNamespace(
            runtime=runtime,
            Device=lambda *a: device,
            get_current_stream=lambda: SimpleNamespace(ptr=1234),
            Event=lambda: SimpleNamespace(
                record=lambda: log.append("event"), synchronize=lambda: log.append("event sync")
            ),
            get_elapsed_time=lambda start, end: 0.25,  # ms
        )
        self.RawKernel = lambda source, name: self._block
        self.uint64 = int

    def empty(self, nbytes: int, dtype: str) -> Any:
        self.buffers += 1
        return SimpleNamespace(data=SimpleNamespace(ptr=0x1000 * self.buffers), nbytes=nbytes)

    def _block(self, grid: Any, block: Any, args: tuple[int, int]) -> None:
        flags = (ctypes.c_int * 2).from_address(args[0])
        self.log.append("block")
        if self.host_took_too_long and flags[0] == 0:
            flags[1] = 1


@pytest.fixture
def cupy(monkeypatch: pytest.MonkeyPatch) -> Cupy:
    fake = Cupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


class Cupti:
    """cupti-python's activity API: records queued by the GPU are handed over at a flush."""

    def __init__(self) -> None:
        self.ActivityKind = SimpleNamespace(CONCURRENT_KERNEL=KERNEL)
        self.queued: list[Any] = []
        self.calls: list[str] = []
        self.completed: Any = None

    def activity_register_callbacks(self, requested: Any, completed: Any) -> None:
        self.requested, self.completed = requested, completed

    def activity_enable(self, kind: int) -> None:
        self.calls.append("enable")

    def activity_disable(self, kind: int) -> None:
        self.calls.append("disable")

    def activity_flush_all(self, forced: int) -> None:
        self.calls.append("flush")
        queued, self.queued = self.queued, []
        self.completed(queued)


def record(name: str, start: int, end: int, kind: int = KERNEL) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, name=name, start=start, end=end)


@pytest.fixture
def cupti(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cupti]:
    fake = Cupti()
    package = ModuleType("cupti")
    package.cupti = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)
    yield fake


def test_the_host_timer_times_the_launch_alone_in_microseconds() -> None:
    timer = HostTimer()
    assert (timer.method, timer.l2_flushed) == ("host", False)
    assert timer.time(lambda: time.sleep(0.02)) >= 20_000
    done: list[str] = []
    # work done while the launch "runs" comes after the clock stopped
    elapsed = timer.time(lambda: None, lambda: done.append("during") or time.sleep(0.3))
    assert done == ["during"] and elapsed < 300_000


def test_a_cpu_suite_gets_host_clocks_for_every_workload() -> None:
    made = timers.make_timers("cpu")
    assert isinstance(made, HostTimers) and isinstance(made.events, HostTimer)


def test_busy_time_counts_each_nanosecond_once_in_any_order() -> None:
    assert busy_ns([("b", 150, 300), ("a", 0, 100)]) == 250
    assert busy_ns([("outer", 0, 1000), ("inner", 200, 300)]) == 1000
    assert busy_ns([("a", 0, 100), ("b", 100, 150)]) == 150  # back to back: one interval


@pytest.mark.parametrize(("l2", "nbytes"), [(50 << 20, MIN_FLUSH_BYTES), (126 << 20, 252 << 20)])
def test_the_flush_writes_twice_the_l2_and_at_least_128_mib(
    monkeypatch: pytest.MonkeyPatch, l2: int, nbytes: int
) -> None:
    cp = Cupy(l2)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    flush = L2Flush()
    assert flush.nbytes == nbytes
    flush()
    assert cp.log == [("memset", flush.buffer.data.ptr, nbytes)]


def test_an_events_sample_is_held_until_enqueued_and_flushed_first(cupy: Cupy) -> None:
    timer = CudaEventTimer(L2Flush(), timers.Blocker(cupy))
    cupy.log.clear()
    elapsed = timer.time(lambda: cupy.log.append("launch"), lambda: cupy.log.append("during"))
    steps = [s if isinstance(s, str) else s[0] for s in cupy.log]
    assert steps == ["block", "memset", "event", "launch", "event", "during", "event sync"]
    assert elapsed == 250.0  # CUDA's milliseconds in microseconds
    assert cupy.flags[0] == 1  # released once the sample was enqueued


def test_a_launch_that_synchronizes_is_timed_again_without_the_blocking_kernel(
    cupy: Cupy,
) -> None:
    timer = CudaEventTimer(L2Flush(), timers.Blocker(cupy))
    cupy.host_took_too_long = True
    launches: list[int] = []
    assert timer.time(lambda: launches.append(1)) == 250.0
    assert launches == [1, 1] and timer.blocker is None
    cupy.log.clear()
    timer.time(lambda: None)
    assert "block" not in cupy.log  # given up for good


def test_kernel_records_leave_out_the_runners_own_kernels_and_other_activities(
    cupti: Cupti,
) -> None:
    activity = KernelActivity()
    assert activity._requested() == (ACTIVITY_BUFFER_BYTES, 0)
    cupti.queued = [
        record("gemm", 0, 10),
        record("kernelwatch_block", 0, 99),
        record("memcpy", 5, 6, kind=1),
        record("relu", 10, 12),
    ]
    assert activity.drain() == [("gemm", 0, 10), ("relu", 10, 12)]
    assert activity.drain() == []  # each record handed over once


def test_kernel_records_are_collected_only_between_enable_and_disable(cupti: Cupti) -> None:
    activity = KernelActivity()
    activity.enable()
    activity.enable()
    cupti.queued = [record("late", 0, 1)]
    activity.disable()  # drained and dropped: the next workload starts with none of them
    activity.disable()
    assert cupti.calls == ["enable", "flush", "disable"]
    activity.enable()
    cupti.queued = [record("next", 5, 6)]
    assert activity.drain() == [("next", 5, 6)]


def test_a_cupti_sample_is_the_busy_time_of_its_kernels_or_an_error(
    cupy: Cupy, cupti: Cupti
) -> None:
    timer = CuptiTimer(L2Flush(), KernelActivity())

    def launch() -> None:
        cupy.log.append("launch")
        cupti.queued = [record("gemm", 1_000, 3_976), record("splitK", 9_000, 10_568)]

    assert timer.time(launch) == pytest.approx(4.544)  # 2976 + 1568 ns
    assert [s if isinstance(s, str) else s[0] for s in cupy.log] == [
        "memset",
        "launch",
        "device sync",
    ]
    with pytest.raises(RuntimeError, match="CUPTI delivered no kernel record for this launch"):
        timer.time(lambda: None)  # e.g. a launch of copies only


def test_a_gpu_without_mapped_memory_times_with_events_unblocked(
    cupy: Cupy, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(nbytes: int, flags: int) -> int:
        raise RuntimeError("cudaErrorNotSupported: " + "x" * 600)

    monkeypatch.setattr(cupy.cuda.runtime, "hostAlloc", refused)
    made = GpuTimers()
    assert made.events.blocker is None
    assert made.blocker_error.startswith("RuntimeError: cudaErrorNotSupported: ")
    assert len(made.blocker_error) == 500


def test_without_cupti_python_no_workload_is_timed_by_cupti_and_it_is_asked_once(
    cupy: Cupy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)
    made = GpuTimers()
    assert made.cupti() is None
    assert made.cupti_error.startswith("ModuleNotFoundError: ")
    monkeypatch.delitem(sys.modules, "cupti")  # were it importable now: the error stands
    assert made.cupti() is None
    assert made.cupti_works(lambda timer: 1.0) is False


def test_cupti_times_a_workload_only_where_its_sample_has_kernel_records(
    cupy: Cupy, cupti: Cupti
) -> None:
    made = GpuTimers()

    def with_kernels(timer: CuptiTimer) -> float:
        cupti.queued = [record("gemm", 0, 100)]
        return timer.time(lambda: None)

    assert made.cupti_works(with_kernels) is True
    assert made.cupti_works(lambda timer: timer.time(lambda: None)) is False
    assert cupti.calls.count("enable") == cupti.calls.count("disable") == 2  # never left on

"""Timing one launch: host clocks (CPU suites), CUDA events or CUPTI kernel timestamps (GPU).

Every GPU sample starts cold: a buffer of max(2 x L2, 128 MiB) is written with cudaMemsetAsync
just before the launch. CUDA events time a launch with the launch overhead in it. So that the
host's enqueueing (Python, several kernels) is not measured, an events sample is enqueued behind
a small kernel that spins until the host has enqueued all of it (nvbench's "blocking kernel").
For launches of a few tens of microseconds the events' own 3-4 us weigh too much: CUPTI's kernel
activity records (cupti-python) then give the launch's GPU busy time (the union of its kernels'
intervals). Which one times a workload is part of its definition (runner.measure.sampling.
workload_method), never chosen from a measurement.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Iterable
from typing import Any

MIN_FLUSH_BYTES = 128 << 20
STACK_SIZE_LIMIT = 0  # cudaLimitStackSize
STACK_STEP = 64  # bytes per thread between two placements of local memory
STACK_STEPS = 8  # then back to the first step above the context's own size
FLUSH_BUFFERS = 3  # the ring of L2 flush buffers (L2Flush.move)
FILLER_MAX_BYTES = 192 << 20  # a placement's filler (GpuTimers.filler): 0 to this many bytes,
FILLER_STEP = 64 << 10  # in steps of this many
OWN_KERNELS = "kernelwatch_"  # the runner's own kernels, never part of a measurement
BLOCK_TIMEOUT_NS = 200_000_000
# CUPTI's activity buffers: each forced flush (one per sample) hands a new one over, and a
# sample's host time grows with its size: on the H100 a cold CUPTI sample of a 4 us kernel took
# 0.96 ms with 8 MiB buffers, 0.50 ms with 1 MiB and 0.43 ms with 64 KiB, against 0.06 ms
# without CUPTI (a study: benchmarks/sample_cost.py, in git at 5bff08e). 128 KiB holds several
# hundred kernel records.
ACTIVITY_BUFFER_BYTES = 128 << 10

During = Callable[[], None] | None

_BLOCK_SRC = r"""
extern "C" __global__ void kernelwatch_block(volatile int* flag, unsigned long long limit) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (flag[0] == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > limit) { flag[1] = 1; break; }
    }
}
"""


class HostTimer:
    """Wall-clock time of a synchronous launch, for suites whose work runs on the CPU."""

    method = "host"
    l2_flushed = False

    def sync(self) -> None:
        pass

    def begin(self) -> None:
        pass

    def end(self) -> None:
        pass

    def time(self, launch: Callable[[], Any], during: During = None) -> float:
        start = time.perf_counter_ns()
        launch()
        elapsed = (time.perf_counter_ns() - start) / 1e3  # microseconds
        if during is not None:
            during()
        return elapsed


class L2Flush:
    """Writes a buffer of max(2 x L2, 128 MiB) on the current stream: the next launch is cold.

    `move()` goes on to the next buffer of a ring of FLUSH_BUFFERS (each allocated when first
    used): the L2 lines a flush leaves dirty then sit elsewhere in physical memory."""

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.l2_bytes = int(props.get("l2CacheSize", 50 << 20))
        self.nbytes = max(2 * self.l2_bytes, MIN_FLUSH_BYTES)
        self.buffers = [cupy.empty(self.nbytes, dtype=cupy.uint8)]
        self.index = 0

    @property
    def buffer(self) -> Any:
        return self.buffers[self.index]

    def move(self) -> bool:
        """Flush with the next buffer of the ring from now on (False: no memory for it)."""
        following = (self.index + 1) % FLUSH_BUFFERS
        if following == len(self.buffers):
            try:
                self.buffers.append(self.cp.empty(self.nbytes, dtype=self.cp.uint8))
            except Exception:  # out of memory: the buffers there are
                if len(self.buffers) == 1:
                    return False
                following = 0
        self.index = following
        return True

    def __call__(self) -> None:
        stream = self.cp.cuda.get_current_stream()
        self.cp.cuda.runtime.memsetAsync(self.buffer.data.ptr, 0, self.nbytes, stream.ptr)


class Blocker:
    """Holds the stream in a spinning kernel until `release()`: the host enqueues a whole
    sample before the GPU starts it. `timed_out` tells that the host took over 200 ms (a launch
    that synchronizes): that sample is not valid."""

    def __init__(self, cp: Any) -> None:
        rt = cp.cuda.runtime
        self.cp = cp
        self.host = rt.hostAlloc(8, getattr(rt, "hostAllocMapped", 2))  # cudaHostAllocMapped
        self.flags = (ctypes.c_int * 2).from_address(self.host)
        # With unified addressing (every 64-bit CUDA platform) the device uses the host pointer.
        get_pointer = getattr(rt, "hostGetDevicePointer", None)
        self.device = get_pointer(self.host, 0) if get_pointer else self.host
        self.kernel = cp.RawKernel(_BLOCK_SRC, "kernelwatch_block")
        self.flags[0] = 1
        self.kernel((1,), (1,), (cp.uint64(self.device), cp.uint64(BLOCK_TIMEOUT_NS)))
        cp.cuda.Device().synchronize()  # compiled and runnable: fail here, not mid-sample

    def hold(self) -> None:
        self.flags[0] = self.flags[1] = 0
        self.kernel((1,), (1,), (self.cp.uint64(self.device), self.cp.uint64(BLOCK_TIMEOUT_NS)))

    def release(self) -> None:
        self.flags[0] = 1

    @property
    def timed_out(self) -> bool:
        return bool(self.flags[1])


class CudaEventTimer:
    """CUDA events around the launch, on a stream whose L2 was flushed just before."""

    method = "cuda_events"
    l2_flushed = True

    def __init__(self, flush: L2Flush, blocker: Blocker | None) -> None:
        self.cp = flush.cp
        self.flush = flush
        self.blocker = blocker
        self.start_event = self.cp.cuda.Event()
        self.end_event = self.cp.cuda.Event()

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()

    def begin(self) -> None:
        pass

    def end(self) -> None:
        pass

    def time(self, launch: Callable[[], Any], during: During = None) -> float:
        blocker = self.blocker
        if blocker is not None:
            blocker.hold()
        self.flush()
        self.start_event.record()
        launch()
        self.end_event.record()
        if blocker is not None:
            blocker.release()
        if during is not None:  # host work while the GPU runs: not in the measured interval
            during()
        self.end_event.synchronize()
        if blocker is not None and blocker.timed_out:  # the launch synchronized: don't block
            self.blocker = None
            return self.time(launch, during)
        return self.cp.cuda.get_elapsed_time(self.start_event, self.end_event) * 1e3  # us


class KernelActivity:
    """CUPTI kernel activity records through cupti-python: (name, start_ns, end_ns) of every
    kernel that ran while enabled. One per process (CUPTI allows one activity subscriber)."""

    def __init__(self) -> None:
        from cupti import cupti

        self.cupti = cupti
        self.kind = cupti.ActivityKind.CONCURRENT_KERNEL
        self.records: list[tuple[str, int, int]] = []
        self.enabled = False
        cupti.activity_register_callbacks(self._requested, self._completed)

    @staticmethod
    def _requested() -> tuple[int, int]:
        return ACTIVITY_BUFFER_BYTES, 0  # no limit on records: CUPTI asks again when full

    def _completed(self, activities: list[Any]) -> None:
        for a in activities:
            if int(a.kind) == int(self.kind) and not str(a.name).startswith(OWN_KERNELS):
                self.records.append((str(a.name), int(a.start), int(a.end)))

    def enable(self) -> None:
        if not self.enabled:
            self.cupti.activity_enable(self.kind)
            self.enabled = True

    def disable(self) -> None:
        if self.enabled:
            self.drain()
            self.cupti.activity_disable(self.kind)
            self.enabled = False

    def drain(self) -> list[tuple[str, int, int]]:
        """Every record since the last drain (call after a device synchronize)."""
        self.cupti.activity_flush_all(1)
        out, self.records = self.records, []
        return out


def busy_ns(records: Iterable[tuple[str, int, int]]) -> int:
    """Length of the union of the kernels' [start, end] intervals: GPU busy time, without the
    gaps between dependent launches (CUPTI can place a library's second kernel far later)."""
    total, reach = 0, None
    for _, start, end in sorted(records, key=lambda r: r[1]):
        if reach is None or start > reach:
            total, reach = total + end - start, end
        elif end > reach:
            total, reach = total + end - reach, end
    return total


class CuptiTimer:
    """GPU busy time of a launch from CUPTI's kernel timestamps (see busy_ns)."""

    method = "cupti"
    l2_flushed = True

    def __init__(self, flush: L2Flush, activity: KernelActivity) -> None:
        self.cp = flush.cp
        self.flush = flush
        self.activity = activity

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()

    def begin(self) -> None:
        """Start collecting kernel records (only while a CUPTI-timed workload runs)."""
        self.activity.enable()
        self.activity.drain()

    def end(self) -> None:
        self.activity.disable()

    def time(self, launch: Callable[[], Any], during: During = None) -> float:
        self.flush()
        launch()
        if during is not None:
            during()
        self.sync()
        records = self.activity.drain()
        if not records:
            raise RuntimeError("CUPTI delivered no kernel record for this launch")
        return busy_ns(records) / 1e3


class HostTimers:
    """CPU suites: host clocks for every workload."""

    def __init__(self) -> None:
        self.events = HostTimer()


def make_timers(device: str) -> HostTimers | GpuTimers:
    return GpuTimers() if device == "cuda" else HostTimers()


class GpuTimers:
    """The timers of one GPU worker process and the per-workload choice between them."""

    def __init__(self) -> None:
        self.flush = L2Flush()
        self.blocker_error = ""
        try:
            blocker: Blocker | None = Blocker(self.flush.cp)
        except Exception as exc:  # no mapped host memory or no NVRTC: events without blocking
            blocker, self.blocker_error = None, f"{type(exc).__name__}: {exc}"[:500]
        self.events = CudaEventTimer(self.flush, blocker)
        self._cupti: CuptiTimer | None = None
        self.cupti_error = ""
        self.stack_base: int | None = None
        self.relocations = 0
        self.relocate_error = ""

    def relocate(self, local_memory: bool = True) -> None:
        """Other physical places for what a cold sample touches besides the workload's own
        buffers: the next L2 flush buffer (L2Flush.move) and, with `local_memory`, a new
        backing store of local memory (relocate_local_memory)."""
        self.flush.move()
        if local_memory:
            self.relocate_local_memory()

    def filler(self, rng: Any) -> Any | None:
        """Fresh memory at a random place for the buffers allocated next: CuPy's pool gives
        its cached blocks back to the driver (otherwise the next buffers come out of the same
        few chunks, the same physical pages, that the process's earlier workloads left, and
        every placement of a process shares their offset: on the H100, 4 us kernels sat up to
        9% apart from one process to the next, all of a process's short kernels alike), then
        an allocation of a random size (0 to FILLER_MAX_BYTES) takes the first of the pages
        that come. Returned to be held while the buffers after it are; None where there is no
        memory for it."""
        nbytes = int(rng.integers(0, FILLER_MAX_BYTES // FILLER_STEP + 1)) * FILLER_STEP
        cp = self.flush.cp
        with contextlib.suppress(Exception):  # not CuPy's own pool: the offset alone
            cp.get_default_memory_pool().free_all_blocks()
        try:
            return cp.empty(max(nbytes, 1), dtype=cp.uint8)
        except Exception:  # out of memory: the placement without its offset
            return None

    def relocate_local_memory(self) -> bool:
        """A new backing store for the context's local memory (the stack frames where kernels
        spill registers), at other addresses: the stack-size limit is set to another value
        (STACK_STEP more per thread than the last, cycling over STACK_STEPS values above the
        context's own), which makes the driver allocate the local memory of every thread
        again. Whether it did is whether the limit took (False where the driver refused).
        The next few launches run slower (on the H100 2-4% for ~2 ms): sample after that."""
        if self.relocate_error:
            return False
        rt = self.flush.cp.cuda.runtime
        try:
            if self.stack_base is None:
                self.stack_base = int(rt.deviceGetLimit(STACK_SIZE_LIMIT))
            self.relocations += 1
            size = self.stack_base + STACK_STEP * (1 + (self.relocations - 1) % STACK_STEPS)
            rt.deviceSetLimit(STACK_SIZE_LIMIT, size)
            return True
        except Exception as exc:  # not supported here: one placement of local memory it is
            self.relocate_error = f"{type(exc).__name__}: {exc}"[:500]
            return False

    def cupti_works(self, sample: Callable[[Any], float]) -> bool:
        """Whether CUPTI times this workload (a launch of copies only has no kernel record)."""
        timer = self.cupti()
        if timer is None:
            return False
        timer.begin()
        try:
            sample(timer)
            return True
        except RuntimeError:
            return False
        finally:
            timer.end()

    def cupti(self) -> CuptiTimer | None:
        """The CUPTI timer (its KernelActivity is the process's one CUPTI subscriber)."""
        if self._cupti is None and not self.cupti_error:
            try:
                self._cupti = CuptiTimer(self.flush, KernelActivity())
            except Exception as exc:  # no cupti-python, or CUPTI refused: events it is
                self.cupti_error = f"{type(exc).__name__}: {exc}"[:500]
        return self._cupti

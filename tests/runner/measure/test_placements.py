"""Short GPU launches sampled on several placements in memory (runner.measure.sampling.PLACEMENTS),
CPU only: fake instances, timers and NVML watch stand in for the GPU."""

from __future__ import annotations

import itertools
import statistics
import time
from types import SimpleNamespace
from typing import Any

import numpy
import pytest

from runner.measure import sampling
from runner.measure.sampling import placements, round_timing, time_workload
from runner.measure.timers import (
    FILLER_MAX_BYTES,
    FILLER_STEP,
    FLUSH_BUFFERS,
    STACK_STEP,
    STACK_STEPS,
    GpuTimers,
    HostTimers,
    L2Flush,
)
from runner.suite.load import Timing


class Instance:
    """A launch whose GPU time depends on where it sits in memory: 100 us + its index."""

    def __init__(self, log: list[str], index: int) -> None:
        self.log, self.index, self.closed = log, index, False

    def launch(self) -> None:
        self.log.append(f"launch {self.index}")

    def close(self) -> None:
        self.closed = True
        self.log.append(f"close {self.index}")


class Workload:
    id = "w[x=1]"

    def __init__(self, fail_after: int | None = None) -> None:
        self.log: list[str] = []
        self.made: list[Instance] = []
        self.fail_after = fail_after

    def prepare(self, seed: int) -> Instance:
        if self.fail_after is not None and len(self.made) >= self.fail_after:
            raise MemoryError("out of memory allocating 1 GiB")
        self.made.append(Instance(self.log, len(self.made)))
        return self.made[-1]


class Timer:
    method = "cuda_events"
    l2_flushed = True

    def __init__(self, log: list[str]) -> None:
        self.log, self.active = log, False
        self.while_active = 0

    def sync(self) -> None:
        pass

    def begin(self) -> None:
        self.active = True

    def end(self) -> None:
        self.active = False

    def time(self, launch: Any, during: Any = None) -> float:
        self.while_active += self.active
        launch()
        return 100.0 + launch.__self__.index


class FakeGpuTimers:
    """What time_workload needs of runner.measure.timers.GpuTimers."""

    def __init__(self, log: list[str]) -> None:
        self.events = Timer(log)
        self.log = log
        self.relocations = 0

    def cupti(self) -> None:
        return None

    def cupti_works(self, sample: Any) -> bool:
        return False

    def relocate(self, local_memory: bool = True) -> None:
        self.relocations += 1
        self.log.append("relocate local memory" if local_memory else "relocate")

    def filler(self, rng: Any) -> str:
        self.log.append(f"filler {int(rng.integers(0, 1 << 30))}")
        return "filler"


class Watch:
    def counters(self) -> dict[str, int]:
        return {}

    def throttled_since(self, counters: dict[str, int]) -> list[str]:
        return []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def during(self) -> None:
        pass

    def result(self) -> dict[str, Any]:
        return {"sm_clock_mhz": None, "throttle_reasons": []}


@pytest.fixture(autouse=True)
def no_settling_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "ROUND_SETTLE_SECONDS", 0.0)  # ROUND_SETTLE_SAMPLES alone


TIMING = Timing(min_samples=10, max_samples=2000, max_seconds=1.0, target_rel_spread=0.005,
                warmup_seconds=0.0)  # fmt: skip


def test_a_short_launch_is_sampled_equally_on_every_placement() -> None:
    w = Workload()
    timers = FakeGpuTimers(w.log)
    out = time_workload(w, timers, "cuda_events", TIMING, 0, Watch())
    samples, rounds = out["samples"], sampling.SHORT_PLACEMENTS  # a fake launch takes no time
    # round 1 stops at 10 samples (no spread); each later placement takes as many
    assert len(samples) == 10 * rounds
    assert [samples.count(100.0 + i) for i in range(rounds)] == [10] * rounds
    assert timers.relocations == rounds - 1
    assert f"{rounds} placements x 10 samples" in out["stop_reason"]
    assert out["placements"] == rounds  # runner.run.pipeline times it in more processes
    # every placement was held until the last sample, then all were released
    assert len(w.made) == rounds and all(i.closed for i in w.made)
    first_close = w.log.index("close 0")
    assert all(f"launch {i}" in w.log[:first_close] for i in range(rounds))
    assert w.log[first_close:] == [f"close {i}" for i in range(rounds)]
    # each new placement sits behind a filler of a random size, one drawn per placement
    fillers = [line for line in w.log if line.startswith("filler")]
    assert len(fillers) == rounds - 1 and len(set(fillers)) == rounds - 1
    # local memory moves once, halfway: each of its two states weighs half
    moved = w.log.index("relocate local memory")
    assert w.log.count("relocate local memory") == 1
    assert w.log[: moved + 1].count("relocate") == rounds // 2 - 1
    # after that move, settling samples that are dropped; after the others, none
    halfway, last = f"launch {rounds // 2}", f"launch {rounds - 1}"
    assert w.log.count(halfway) == sampling.ROUND_WARMUPS + sampling.ROUND_SETTLE_SAMPLES + 10
    assert w.log.count(last) == sampling.ROUND_WARMUPS + 10
    assert w.log[w.log.index(last) - 1] == "relocate"
    # the warm-up launches are never samples: the timer is ended around them
    assert timers.events.while_active == len(samples) + sampling.ROUND_SETTLE_SAMPLES
    # where its seconds went: the later placements' prepares apart from the samples
    assert set(out["seconds"]) == {"prepare", "placements", "warm_up", "samples"}
    assert all(v >= 0 for v in out["seconds"].values())


def test_placements_differ_from_process_to_process() -> None:
    logs = []
    for _ in range(2):
        w = Workload()
        time_workload(w, FakeGpuTimers(w.log), "cuda_events", TIMING, 0, Watch())
        logs.append([line for line in w.log if line.startswith("filler")])
    assert logs[0] != logs[1]  # drawn afresh, not the same sequence in every process


def test_a_run_median_no_longer_rests_on_one_placement() -> None:
    w = Workload()
    out = time_workload(w, FakeGpuTimers(w.log), "cuda_events", TIMING, 0, Watch())
    # one placement alone would give 100.0; all of them give the middle of 100..115
    top = 100.0 + sampling.SHORT_PLACEMENTS - 1
    assert statistics.median(out["samples"]) == pytest.approx((100.0 + top) / 2)
    assert sampling.SHORT_PLACEMENTS % 2 == 0  # each of two local-memory states gets half
    assert sampling.PLACEMENTS % 2 == 0


def test_a_launch_of_up_to_2_ms_gets_two_placements(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "SHORT_PLACEMENTS_MAX_US", -1.0)
    w = Workload()
    timers = FakeGpuTimers(w.log)
    out = time_workload(w, timers, "cuda_events", TIMING, 0, Watch())
    assert sorted(set(out["samples"])) == [100.0, 101.0] and len(out["samples"]) == 20
    assert w.log.count("relocate local memory") == 1 and timers.relocations == 1
    assert not any(line.startswith("filler") for line in w.log)  # where the allocator puts it
    assert w.log.count("launch 1") == sampling.ROUND_WARMUPS + sampling.ROUND_SETTLE_SAMPLES + 10


def test_settling_takes_enough_samples_over_enough_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "ROUND_SETTLE_SECONDS", 0.01)
    now = [0.0]

    def sample() -> float:
        now[0] += 0.0005  # 0.5 ms a sample: 20 of them fill 10 ms
        return 1.0

    assert sampling.settle(sample, clock=lambda: now[0]) == 20
    now[0] = 0.0

    def slow() -> float:
        now[0] += 0.01  # one sample fills the time: the count decides
        return 1.0

    assert sampling.settle(slow, clock=lambda: now[0]) == sampling.ROUND_SETTLE_SAMPLES


def test_a_throttled_launch_keeps_one_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "RECOVERY_SECONDS", 0.0)
    monkeypatch.setattr(sampling, "THROTTLED_SAMPLE_SECONDS", 0.0)
    monkeypatch.setattr(sampling, "PACE", 0.0)

    class Capped(Watch):
        def throttled_since(self, counters: dict[str, int]) -> list[str]:
            return ["sw_power_cap"]

    w = Workload()
    timers = FakeGpuTimers(w.log)
    out = time_workload(w, timers, "cuda_events", TIMING, 0, Capped())
    assert set(out["samples"]) == {100.0} and timers.relocations == 0
    assert "paced" in out["stop_reason"] and "placements" not in out["stop_reason"]
    assert out["placements"] == 1


def test_a_long_launch_keeps_one_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "SHORT_PLACEMENTS_MAX_US", -1.0)
    monkeypatch.setattr(sampling, "PLACEMENTS_MAX_US", -1.0)
    w = Workload()
    timers = FakeGpuTimers(w.log)
    out = time_workload(w, timers, "cuda_events", TIMING, 0, Watch())
    assert len(out["samples"]) == 10 and set(out["samples"]) == {100.0}
    assert timers.relocations == 0 and len(w.made) == 1 and w.made[0].closed
    assert "placements" not in out["stop_reason"] and out["placements"] == 1


def test_no_memory_for_another_placement_keeps_the_ones_taken() -> None:
    w = Workload(fail_after=2)
    out = time_workload(w, FakeGpuTimers(w.log), "cuda_events", TIMING, 0, Watch())
    assert sorted(set(out["samples"])) == [100.0, 101.0] and len(out["samples"]) == 20
    assert "2 placements x 10 samples" in out["stop_reason"] and out["placements"] == 2
    assert all(i.closed for i in w.made)


def test_placements_only_for_short_launches_on_a_gpu() -> None:
    gpu = FakeGpuTimers([])
    assert placements(gpu, 5.0) == placements(gpu, 50.0) == sampling.SHORT_PLACEMENTS
    assert placements(gpu, 150.0) == sampling.PLACEMENTS
    assert placements(gpu, sampling.PLACEMENTS_MAX_US + 1) == 1
    assert placements(HostTimers(), 10.0) == 1  # CPU suites: host clocks, one placement


def test_each_round_shares_the_suites_caps() -> None:
    t = round_timing(TIMING, 4)
    assert (t.max_seconds, t.max_samples, t.min_samples) == (0.25, 500, 10)
    assert t.target_rel_spread == TIMING.target_rel_spread
    assert round_timing(TIMING, 1) is TIMING
    assert round_timing(Timing(min_samples=10, max_samples=20), 4).max_samples == 10


class Runtime:
    def __init__(self, base: int = 1024, refuse: bool = False) -> None:
        self.limit, self.refuse, self.calls = base, refuse, 0

    def deviceGetLimit(self, which: int) -> int:
        assert which == 0  # cudaLimitStackSize
        return self.limit

    def deviceSetLimit(self, which: int, value: int) -> None:
        self.calls += 1
        if self.refuse:
            raise RuntimeError("cudaErrorUnsupportedLimit")
        assert which == 0
        self.limit = value


def gpu_timers(runtime: Runtime) -> GpuTimers:
    timers = object.__new__(GpuTimers)  # no GPU: only what relocate_local_memory reads
    timers.flush = SimpleNamespace(cp=SimpleNamespace(cuda=SimpleNamespace(runtime=runtime)))
    timers.stack_base, timers.relocations, timers.relocate_error = None, 0, ""
    return timers


def test_local_memory_moves_to_another_stack_size_every_time() -> None:
    runtime = Runtime(base=1024)
    timers = gpu_timers(runtime)
    seen = []
    for _ in range(2 * STACK_STEPS + 1):
        assert timers.relocate_local_memory()
        seen.append(runtime.limit)
    assert all(a != b for a, b in itertools.pairwise(seen))  # always a new size
    assert min(seen) == 1024 + STACK_STEP and max(seen) == 1024 + STACK_STEPS * STACK_STEP
    assert len(set(seen)) == STACK_STEPS  # bounded: it cycles


def test_a_driver_that_refuses_the_limit_is_asked_once() -> None:
    runtime = Runtime(refuse=True)
    timers = gpu_timers(runtime)
    assert not timers.relocate_local_memory()
    assert not timers.relocate_local_memory()
    assert runtime.calls == 1 and "cudaErrorUnsupportedLimit" in timers.relocate_error


class FakeCupy:
    """cupy.empty that hands out numbered buffers, and fails once `free` of them are out."""

    uint8 = "uint8"

    def __init__(self, free: int) -> None:
        self.free, self.made = free, 0

    def empty(self, nbytes: int, dtype: str) -> str:
        if self.made >= self.free:
            raise MemoryError("out of memory allocating")
        self.made += 1
        return f"buffer {self.made - 1}"


def l2_flush(cp: FakeCupy) -> L2Flush:
    flush = object.__new__(L2Flush)  # no GPU: the ring alone
    flush.cp, flush.nbytes = cp, 1 << 20
    flush.buffers, flush.index = [cp.empty(flush.nbytes, cp.uint8)], 0
    return flush


def test_the_flush_moves_round_a_ring_of_buffers() -> None:
    flush = l2_flush(FakeCupy(free=100))
    seen = [flush.buffer]
    for _ in range(2 * FLUSH_BUFFERS):
        assert flush.move()
        seen.append(flush.buffer)
    assert len(set(seen)) == FLUSH_BUFFERS == flush.cp.made  # each allocated once, then reused
    assert all(a != b for a, b in itertools.pairwise(seen))


def test_without_memory_the_flush_stays_on_the_buffers_it_has() -> None:
    alone = l2_flush(FakeCupy(free=1))
    assert not alone.move() and alone.buffer == "buffer 0"
    two = l2_flush(FakeCupy(free=2))
    assert [two.move() and two.buffer for _ in range(3)] == ["buffer 1", "buffer 0", "buffer 1"]


def test_relocating_moves_the_flush_and_local_memory() -> None:
    runtime = Runtime(base=1024)
    timers = gpu_timers(runtime)
    moved = []
    timers.flush.move = lambda: moved.append(1) or True
    timers.relocate()
    timers.relocate()
    assert len(moved) == 2 and runtime.limit == 1024 + 2 * STACK_STEP
    timers.relocate(local_memory=False)
    assert len(moved) == 3 and runtime.limit == 1024 + 2 * STACK_STEP


def test_a_filler_of_a_random_size_on_fresh_memory() -> None:
    cp = SimpleNamespace(uint8="uint8", sizes=[], log=[])
    cp.empty = lambda nbytes, dtype: cp.log.append("empty") or cp.sizes.append(nbytes)
    pool = SimpleNamespace(free_all_blocks=lambda: cp.log.append("free cached blocks"))
    cp.get_default_memory_pool = lambda: pool
    timers = object.__new__(GpuTimers)
    timers.flush = SimpleNamespace(cp=cp)
    rng = numpy.random.default_rng(1)
    for _ in range(50):
        timers.filler(rng)
    assert all(0 < n <= FILLER_MAX_BYTES and n % FILLER_STEP in (0, 1) for n in cp.sizes)
    assert len(set(cp.sizes)) > 40  # spread over the range, not a few sizes
    # the pool's cached blocks go back first: the filler and the buffers after it take fresh
    # pages, not the chunks the process's earlier workloads left
    assert cp.log[:4] == ["free cached blocks", "empty"] * 2

    def no_memory(nbytes: int, dtype: str) -> None:
        raise MemoryError("out of memory allocating")

    cp.empty = no_memory
    assert timers.filler(rng) is None  # the placement goes on without its offset


class SlowToPrepare(Workload):
    """Each prepare takes 20 ms (what Inductor's or Triton's caches cost a placement)."""

    def prepare(self, seed: int) -> Instance:
        time.sleep(0.02)
        return super().prepare(seed)


def test_the_seconds_of_later_placements_are_told_apart_from_the_first_prepare() -> None:
    w = SlowToPrepare()
    out = time_workload(w, FakeGpuTimers(w.log), "cuda_events", TIMING, 0, Watch())
    later = sampling.SHORT_PLACEMENTS - 1
    assert 0.02 <= out["seconds"]["prepare"] < 0.02 * 2
    assert 0.02 * later <= out["seconds"]["placements"] < 0.02 * later + 0.2
    assert out["seconds"]["samples"] < 0.02 * later  # the placements' prepares are not in it

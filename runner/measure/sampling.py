"""Sampling one workload: warm-up, the choice of timer, when to stop taking samples, and the
traced steps of a kernel timeline (runner.profile.timeline) on the worker's side."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from runner.measure import compile_caches, compile_time
from runner.measure.kernel_steps import STEPS, aggregate
from runner.suite.load import Timing

# CUDA events time a launch with the launch overhead (several us) in it; CUPTI's kernel
# records time the kernels alone. Short launches want CUPTI, and which one a workload gets is
# fixed by its definition (workload_method), never by a measurement.
METHODS = ("cuda_events", "cupti", "host")

# A launch whose warm-up ran into a power or thermal cap (NVML violation counters advanced) is
# sampled paced instead of back to back: the GPU idles RECOVERY_SECONDS first, then for
# PACE x each sample's duration after it, so that its average power stays under the cap and the
# samples see the clocks every other launch sees, over at least THROTTLED_SAMPLE_SECONDS. Back to
# back, ~1 ms tensor-core GEMMs sit at the cap and land on different phases of the controller's
# swings from run to run (measured on the H100: 1-2% between runs).
RECOVERY_SECONDS = 0.25
PACE = 1.0
THROTTLED_SAMPLE_SECONDS = 0.2

# Where a cold sample's buffers sit in physical memory (L2 slices, HBM channels) moves the time of
# a short launch, and stays as long as they stay. On the H100: a new backing store of local memory
# moved gemm_fwd 1024^3 (split-K, registers spilled) and gemm_bwd 256^3 (4 blocks a kernel) by
# 0.5-0.9% (back and forth between two placements), a new instance moved gemm_bwd 256^3 by up to
# 1.2%, a new L2 flush buffer went with +0.8-1.5% for cuBLAS 1024^3 in 4 of 8 processes. Below ~50
# us it is far more: a ~4 us streaming kernel took 4.0-4.6 us by where its buffers sat, and a
# change that made it read 45% more bytes cost +29% to +48% by placement (sd 6 points over 32
# placements; docs/timing-studies.md, 2026-11-26). So a short launch (a synchronized launch of at
# most PLACEMENTS_MAX_US on the host) is sampled in several rounds of as many samples each, every
# round after the first on a fresh placement: a new instance of the workload (inputs, outputs,
# scratch; the earlier ones stay allocated until the last round) and the next L2 flush buffer of a
# ring (GpuTimers.relocate). A launch of at most SHORT_PLACEMENTS_MAX_US gets SHORT_PLACEMENTS
# rounds, each instance on fresh memory behind a filler of a random size (GpuTimers.filler): drawn
# at random, not the same in every process, so that the run's median averages over ~100 placements
# (with the processes of runner.run.timing_passes) instead of resting on the same few each time. A
# longer one gets PLACEMENTS rounds where the allocator puts them (the same in every process: runs
# of >= 50 us launches stay within 1% of each other). Halfway through, the context's local memory
# moves too (a new backing store, GpuTimers.relocate_local_memory), so that each of its two states
# weighs half; the launches just after such a move run slower (2-4% for ~2 ms), so that round first
# drops ROUND_SETTLE_SAMPLES samples over at least ROUND_SETTLE_SECONDS. The first round's stop
# rule decides how many samples each round takes (its time and sample caps are 1/rounds of the
# suite's), so that every placement weighs the same. A launch sampled paced (power-capped, below)
# keeps one placement: its samples are dear. What none of these moves is an offset per process (up
# to ~1.5% for gemm_bwd 256^3, ~1% for gemm_fwd 1024^3 and cuBLAS 1024^3): only more processes
# average that (runner.run.timing_passes times a short launch in twice the suite's processes). A
# few-us launch timed after longer workloads took on such an offset too (their memory, given back,
# held all 16 of its placements): runner.run.timing_passes.timing_order puts the CUPTI-timed
# workloads first.
PLACEMENTS = 2
PLACEMENTS_MAX_US = 2000.0
SHORT_PLACEMENTS = 16
SHORT_PLACEMENTS_MAX_US = 50.0
ROUND_WARMUPS = 3
ROUND_SETTLE_SAMPLES = 10
ROUND_SETTLE_SECONDS = 0.01

WARMUPS = 2  # before the traced steps of a timeline
WARMUP_SYNC_EVERY = 4  # warm-up launches go back to back (the GPU stays busy, clocks rise)


def rel_spread(samples: list[float]) -> float:
    """Relative interquartile range: robust to the odd interrupted sample."""
    if len(samples) < 4:
        return float("inf")
    q1, median, q3 = np.percentile(samples, [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else float("inf")


def collect(
    sample: Callable[[], float],
    timing: Timing,
    clock: Callable[[], float] = time.monotonic,
    min_seconds: float = 0.0,
) -> tuple[list[float], str]:
    """Take samples until the spread is below target, or it has settled, or time is up.

    The spread is checked every min_samples/2 samples from min_samples on (and, with
    `min_seconds`, once the samples span that long). A spread that never
    reaches the target (short kernels: 2-8% from the timer's resolution) stops once it has
    settled (two checks agree within 10%), but only where it is small (at most 4x the target)
    or after 3x min_samples: a large spread means interference, and more samples.
    """
    samples: list[float] = []
    started = clock()
    previous = float("inf")
    target = timing.target_rel_spread
    while True:
        samples.append(sample())
        n = len(samples)
        if n >= timing.max_samples:
            return samples, f"max_samples {timing.max_samples}"
        elapsed = clock() - started
        if elapsed > timing.max_seconds and n >= min(timing.min_samples, 3):
            return samples, f"time cap {timing.max_seconds:g} s after {n} samples"
        if elapsed < min_seconds:
            continue
        if n >= timing.min_samples and n % max(timing.min_samples // 2, 1) == 0:
            spread = rel_spread(samples)
            if spread <= target:
                return samples, f"relative spread {spread:.2%} <= {target:.2%}"
            settled = abs(spread - previous) <= 0.1 * spread
            if settled and (spread <= 4 * target or n >= 3 * timing.min_samples):
                return samples, f"relative spread settled at {spread:.2%} after {n} samples"
            previous = spread


class TimingMethodUnavailable(RuntimeError):
    """The workload's timing method cannot be provided here: it fails, rather than being timed
    another way (a method switch between commits once turned +18.5% into a reported +45%)."""


def workload_method(w: Any, default: str) -> str:
    """The timing method of a workload: its own declaration (`timing_method`), else the suite's
    (`[timing] method`), else "cuda_events" on a GPU and "host" on the CPU. Never a
    measurement: a workload is timed the same way at every commit."""
    declared = getattr(w, "timing_method", None) or default
    if declared not in METHODS:
        raise TimingMethodUnavailable(
            f"unknown timing method {declared!r} for {w.id}; use one of {sorted(METHODS)}"
        )
    return declared


def select_timer(timers: Any, method: str, sample: Callable) -> Any:
    """The timer of `method` in this process; TimingMethodUnavailable where it cannot time
    this workload here."""
    if not hasattr(timers, "cupti"):  # host timing (CPU suites)
        if method != "host":
            raise TimingMethodUnavailable(f"a CPU suite times with the host clock, not {method}")
        return timers.events
    if method == "host":
        raise TimingMethodUnavailable("a GPU suite times with cuda_events or cupti, not host")
    if method == "cuda_events":
        return timers.events
    timer = timers.cupti()
    if timer is None:
        raise TimingMethodUnavailable(
            f"the workload is timed with CUPTI, which is unavailable in this process "
            f"({timers.cupti_error or 'no kernel activity'}); install cupti-python for the "
            "CUDA major of the driver, or declare the workload's timing_method as cuda_events "
            "(a new series then starts)"
        )
    if not timers.cupti_works(sample):
        raise TimingMethodUnavailable(
            "the workload is timed with CUPTI, but CUPTI recorded no kernel of its launch "
            "(a launch of copies only?): declare its timing_method as cuda_events"
        )
    return timer


INPUTS_ENV = "KERNELWATCH_TIMING_INPUTS"  # "host": timing draws its inputs as correctness does


def timing_inputs(device: str) -> str | None:
    """Where a timing process (and the ncu pass) asks a workload to draw its inputs: "device" on
    a GPU (no kernel's time depends on the values; the host generation and upload of the big
    shapes cost seconds per workload and process), unless $KERNELWATCH_TIMING_INPUTS says
    "host"; None (the suite's own choice) for CPU suites."""
    if device != "cuda":
        return None
    return "host" if os.environ.get(INPUTS_ENV, "").strip().lower() == "host" else "device"


def takes_inputs(w: Any) -> bool:
    """Whether the workload's prepare takes `inputs` (the suite protocol's optional keyword)."""
    try:
        return "inputs" in inspect.signature(w.prepare).parameters
    except (TypeError, ValueError):
        return False


def prepare(w: Any, seed: int, inputs: str | None = None) -> Any:
    """`w.prepare(seed, inputs=...)` where the workload's prepare takes `inputs` ("host" or
    "device"), else `w.prepare(seed)`."""
    if inputs is not None and takes_inputs(w):
        return w.prepare(seed, inputs=inputs)
    return w.prepare(seed)


MAX_CHOICES = 100


def choices(instance: Any) -> dict[str, str]:
    """What the instance says it chose in `prepare` (its optional `choices`: an autotuner's
    config per kernel, a library's algorithm), as text; nothing where it says nothing."""
    said = getattr(instance, "choices", None)
    if not isinstance(said, dict):
        return {}
    return {str(k)[:200]: str(v)[:1000] for k, v in list(said.items())[:MAX_CHOICES]}


def time_workload(
    w: Any,
    timers: Any,
    method: str,
    timing: Timing,
    seed: int,
    watch: Any,
    trace: bool = False,
    inputs: str | None = None,
) -> dict[str, Any]:
    """Warm up, take the timer of the workload's `method` (workload_method), sample to the stop
    rule; a short launch on a GPU in PLACEMENTS rounds, each on a fresh placement in memory (see
    PLACEMENTS); with `trace`, then trace a few steps' kernels for the timeline
    (runner.profile.timeline). `inputs`: where the workload draws its inputs (see `prepare`)."""
    caches = compile_caches.Watch(compile_caches.cache_folders(), time.time)
    compiling = compile_time.Watch()
    started = time.perf_counter()
    instance = prepare(w, seed, inputs)  # what compiles (Triton, Inductor, extensions) does here
    prepare_seconds = time.perf_counter() - started
    found = caches.result()
    compiled = compiling.result()
    chosen = choices(instance)
    held = [instance]
    spent = {"prepare": prepare_seconds, "placements": 0.0}  # where its seconds went
    try:
        base = timers.events
        counters = watch.counters()
        started = time.perf_counter()
        warmups = _warm_up(instance, base, timing.warmup_seconds, 3)
        capped = watch.throttled_since(counters)
        if capped:
            time.sleep(RECOVERY_SECONDS)
        fastest = float("inf")  # host time of a synchronized launch: bounds its GPU time
        peak = peak_memory_of(instance.launch, base.sync)  # its first timed launch, as it were
        for _ in range(2):
            started = time.perf_counter()
            instance.launch()
            base.sync()
            fastest = min(fastest, (time.perf_counter() - started) * 1e6)
        current = [instance]
        spent["warm_up"] = time.perf_counter() - started

        def sample_with(timer: Any, during: Any = None) -> float:
            target = current[0]
            reset = getattr(target, "reset", None)
            if reset is not None:
                reset()
            timer.sync()
            return timer.time(target.launch, during)

        def paced(timer: Any, during: Any = None) -> float:
            us = sample_with(timer, during)
            time.sleep(PACE * us * 1e-6)
            return us

        timer = select_timer(timers, method, sample_with)
        rounds = 1 if capped else placements(timers, fastest)  # paced ones: dear, and long
        take = paced if capped else sample_with
        sampling = compile_time.Watch()  # Dynamo compiling now would be timed with the launch
        started = time.perf_counter()
        watch.start()
        timer.begin()
        try:
            samples, reason = collect(
                lambda: take(timer, watch.during),
                round_timing(timing, rounds),
                min_seconds=THROTTLED_SAMPLE_SECONDS if capped else 0.0,
            )
            per_round, placed = len(samples), 1
            # Short launches: placements drawn afresh in every process (GpuTimers.filler).
            anywhere = np.random.default_rng() if rounds == SHORT_PLACEMENTS else None
            for round_ in range(1, rounds):
                local_memory = round_ == rounds // 2  # its second state for the second half
                timer.end()  # the new placement's warm-up is no sample (CUPTI: not recorded)
                placing, placed_at = compile_time.Watch(), time.perf_counter()
                fresh = relocate(w, seed, inputs, timers, held, anywhere, local_memory)
                spent["placements"] += time.perf_counter() - placed_at
                sampling.set_apart(placing.result())
                timer.begin()
                if fresh is None:
                    break
                current[0] = fresh
                if local_memory:
                    settle(lambda: take(timer))
                samples.extend(take(timer, watch.during) for _ in range(per_round))
                placed += 1
        finally:
            watch.stop()
            timer.end()
            spent["samples"] = time.perf_counter() - started - spent["placements"]
        if rounds > 1:
            reason += f"; {placed} placements x {per_round} samples"
        if recompiled := compile_time.during_sampling(sampling.result()):
            reason += f"; {recompiled}"
        if capped:
            reason += (
                f" (warm-up throttled by {', '.join(capped)}: {RECOVERY_SECONDS:g} s idle, then"
                f" samples paced at {1 / (1 + PACE):.0%} duty"
                f" over >= {THROTTLED_SAMPLE_SECONDS:g} s)"
            )
        traced = _trace(instance, timers) if trace else None
    finally:
        for each in held:
            close = getattr(each, "close", None)  # fillers have none: dropped with `held`
            if close is not None:
                close()
    return {
        **({"timeline": traced} if traced else {}),
        "samples": samples,
        "stop_reason": reason,
        "warmups": warmups,
        "method": timer.method,
        "blocking": getattr(timer, "blocker", None) is not None,
        "l2_flushed": timer.l2_flushed,
        # > 1: a short launch (runner.run.timing_passes times it in more processes)
        "placements": placed,
        "prepare_seconds": round(prepare_seconds, 3),
        **({"compile_caches": found} if found else {}),
        **({"torch_compile": compiled} if compiled else {}),
        **({"peak_memory_bytes": peak} if peak is not None else {}),
        **({"choices": chosen} if chosen else {}),
        "seconds": {part: round(value, 3) for part, value in spent.items()},
        **watch.result(),
    }


def peak_memory_of(launch: Callable[[], None], sync: Callable[[], None]) -> int | None:
    """The most device memory PyTorch's allocator held during one launch (its inputs and
    outputs included: what the workload needs to run), in bytes; None where the workload does
    not allocate through PyTorch (CuPy's pool keeps no peak) or PyTorch never used the GPU."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return None
    sync()
    cuda.reset_peak_memory_stats()
    launch()
    sync()
    return int(cuda.max_memory_allocated())


def settle(sample: Callable[[], float], clock: Callable[[], float] = time.monotonic) -> int:
    """Take and drop samples, at least ROUND_SETTLE_SAMPLES over ROUND_SETTLE_SECONDS, after a
    new placement (the launches just after a move of local memory run slower); how many."""
    until = clock() + ROUND_SETTLE_SECONDS
    dropped = 0
    while dropped < ROUND_SETTLE_SAMPLES or clock() < until:
        sample()
        dropped += 1
    return dropped


def placements(timers: Any, host_us: float) -> int:
    """How many placements a launch is sampled on, by the host time of a synchronized launch:
    SHORT_PLACEMENTS up to SHORT_PLACEMENTS_MAX_US, PLACEMENTS up to PLACEMENTS_MAX_US, else 1
    (a long launch spreads over the whole memory and every multiprocessor by itself, and its
    samples are dear). CPU suites: 1."""
    if not hasattr(timers, "relocate"):
        return 1
    if host_us <= SHORT_PLACEMENTS_MAX_US:
        return SHORT_PLACEMENTS
    return PLACEMENTS if host_us <= PLACEMENTS_MAX_US else 1


def round_timing(timing: Timing, rounds: int) -> Timing:
    """The stop rule of a placement's round: the suite's, its caps shared among the rounds."""
    if rounds <= 1:
        return timing
    return dataclasses.replace(
        timing,
        max_samples=max(timing.min_samples, timing.max_samples // rounds),
        max_seconds=timing.max_seconds / rounds,
    )


def relocate(
    w: Any,
    seed: int,
    inputs: str | None,
    timers: Any,
    held: list[Any],
    rng: Any | None,
    local_memory: bool,
) -> Any | None:
    """A fresh placement: a new instance of `w` (appended to `held`, so that the earlier ones
    keep their memory and the new one gets other addresses), with `rng` on fresh memory behind
    a filler of a random size (GpuTimers.filler, held too), the next flush buffer and, with
    `local_memory`, a new backing store of local memory (timers.relocate), warmed up by
    ROUND_WARMUPS launches; None where the GPU has no memory for another instance. Without
    `rng` (launches of up to PLACEMENTS_MAX_US) the instance comes where the allocator puts
    it: the same places in every process, which keeps their runs alike."""
    filler = timers.filler(rng) if rng is not None else None
    if filler is not None:
        held.append(filler)
    try:
        fresh = prepare(w, seed, inputs)
    except Exception as exc:  # out of memory: the placements taken so far
        if "memory" in f"{type(exc).__name__} {exc}".lower():
            return None
        raise
    held.append(fresh)
    timers.relocate(local_memory)
    reset = getattr(fresh, "reset", None)
    for _ in range(ROUND_WARMUPS):
        if reset is not None:
            reset()
        fresh.launch()
    timers.events.sync()
    return fresh


def _warm_up(instance: Any, base: Any, seconds: float, at_least: int) -> int:
    """Launch back to back (a sync every few) for `seconds` and `at_least` launches."""
    until = time.monotonic() + seconds
    launches = 0
    while launches < at_least or time.monotonic() < until:
        instance.launch()
        launches += 1
        if launches % WARMUP_SYNC_EVERY == 0:
            base.sync()
    base.sync()
    return launches


def _trace(instance: Any, timers: Any) -> dict[str, Any] | None:
    """The timeline's steps, traced with the process's CUPTI subscriber (None without it)."""
    cupti = timers.cupti()
    if cupti is None:
        return None
    return {"steps": STEPS, "kernels": trace_steps(instance, STEPS, timers.flush, cupti.activity)}


_shared: dict[str, Any] = {}


def trace_workload(
    w: Any, seed: int, tracer: str, steps: int, inputs: str | None = None
) -> dict[str, Any]:
    """Prepare `w`, warm up, then trace `steps` cold steps with `tracer`: "cupti", or "nsys"
    (the steps between cudaProfilerStart/Stop, for `nsys --capture-range cudaProfilerApi`)."""
    from runner.measure.timers import KernelActivity, L2Flush

    steps = steps or STEPS
    flush = _shared.get("flush") or _shared.setdefault("flush", L2Flush())
    activity = None
    if tracer == "cupti":
        activity = _shared.get("activity") or _shared.setdefault("activity", KernelActivity())
    instance = prepare(w, seed, inputs)
    try:
        for _ in range(WARMUPS):
            instance.launch()
        kernels = trace_steps(instance, steps, flush, activity)
    finally:
        instance.close()
    out: dict[str, Any] = {"tracer": tracer, "steps": steps}
    if kernels is not None:
        out["kernels"] = kernels
    return out


def trace_steps(instance: Any, steps: int, flush: Any, activity: Any) -> list[dict] | None:
    """`steps` cold steps (state reset, L2 flushed before each) of a warm instance, traced by
    `activity` (a runner.measure.timers.KernelActivity: the timeline entries are returned) or, with
    None, bracketed by cudaProfilerStart/Stop for nsys (None is returned)."""
    import cupy

    reset = getattr(instance, "reset", None)
    device = cupy.cuda.Device()
    device.synchronize()
    if activity is not None:
        activity.enable()
        activity.drain()
    else:
        _profiler(cupy, "Start")
    try:
        for _ in range(steps):
            if reset is not None:
                reset()
            flush()
            instance.launch()
        device.synchronize()
    finally:
        if activity is None:
            _profiler(cupy, "Stop")
    if activity is None:
        return None
    records = activity.drain()
    activity.disable()
    return aggregate(records, steps)


def _profiler(cupy: Any, what: str) -> None:
    """cudaProfilerStart/Stop: the capture range of `nsys --capture-range cudaProfilerApi`."""
    fn = getattr(cupy.cuda.runtime, f"profiler{what}", None)
    if fn is None:
        from cupy.cuda import profiler

        fn = getattr(profiler, what.lower())
    fn()

"""The child process that imports a suite and lists, checks, times, traces or profiles it.

Run as `python -m runner.worker CONFIG.json`. It speaks JSON lines on a private copy of its
stdout (the suite's own prints go to stderr), one `start` line before each workload and one
`result` or `error` line after it, so the parent knows which workload a hang or a crash hit.
A workload that leaves the CUDA context dead (a sticky error: an illegal address, a trap) gets
an `error` line with status `crashed` and ends the process: it cannot fail the next workloads.
Modes: `list`, `check` (correctness), `time` (cold samples to the stop rule), `timeline` (a few
training steps with kernel activity traced, runner.profile.timeline) and `profile` (each workload
launched once inside an NVTX range, for one ncu pass over all of them, runner.profile.ncu_pass). A
config with `"wait": true` starts the worker ahead of its phase (runner.measure.phase.WarmWorkers):
it warms up (`warm_up`), then reads `{"ids": [...]}` from stdin (an empty stdin: it exits).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from runner.host import gpuinfo
from runner.host.checks import cuda_version
from runner.measure.preload import preload
from runner.measure.sampling import time_workload, timing_inputs, workload_method
from runner.measure.timers import make_timers
from runner.suite.load import SuiteError, Timing, load_suite
from runner.worker import launch_record
from runner.worker.arrays import to_host
from runner.worker.compiled import compiled_kernels
from runner.worker.references import NoKey, References, reference_key


class Protocol:
    def __init__(self) -> None:
        # Keep the real stdout for our lines; the suite's prints land on stderr.
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)

    def send(self, **message: Any) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()


def _import(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attr) if attr else loaded


def describe(w: Any) -> dict[str, Any]:
    return {
        "id": w.id,
        "name": w.name,
        "params": dict(w.params),
        "kernels": list(w.kernels),
        "tags": list(w.tags),
        "precision": w.precision,
        "tolerance": float(w.tolerance),
        "flops": float(w.flops) if w.flops is not None else None,
        "bytes": float(w.bytes) if w.bytes is not None else None,
        "timing_method": getattr(w, "timing_method", None),
    }


def generic_check(w: Any, seed: int, kept: References | None = None, root: str = "") -> dict:
    """Poison, launch once, compare every output with the float64 reference (relative L2);
    outputs and references may be NumPy or CuPy arrays or torch tensors (runner.worker.arrays).
    `kept`: references kept by what determines them (runner.worker.references)."""
    instance = w.prepare(seed)
    said: dict[str, Any] = {}
    try:
        instance.poison()
        key = None
        if kept is not None:
            try:
                key = reference_key(w, instance, Path(root).resolve())
            except NoKey as exc:
                said["reference"] = f"computed (not kept: {exc})"
            except Exception as exc:  # a key is never worth failing the check
                said["reference"] = f"computed (not kept: {type(exc).__name__} reading it)"
        instance.launch()
        outputs = instance.fetch()
        reference = kept.get(key) if kept is not None and key else None
        if reference is not None:
            said["reference"] = "kept from an earlier run of the same reference and inputs"
        else:
            started = time.perf_counter()
            reference = instance.reference()
            if kept is not None and key:
                kept.put(key, reference)
                seconds = time.perf_counter() - started
                said["reference"] = f"computed in {seconds:.1f} s and kept"
    finally:
        instance.close()
    worst, unwritten = 0.0, 0
    for name, expected in reference.items():
        got, expected = to_host(outputs[name]), to_host(expected)
        bad = int(np.count_nonzero(~np.isfinite(got)))
        unwritten += bad
        if bad:
            worst = math.inf
            continue
        norm = float(np.linalg.norm(expected))
        error = float(np.linalg.norm(got - expected))
        worst = max(worst, error / norm if norm > 0 else error)
    return {
        "passed": math.isfinite(worst) and worst <= w.tolerance,
        "error_norm": worst,
        "tolerance": float(w.tolerance),
        "norm": "rel_l2",
        "precision": w.precision,
        "unwritten": unwritten,
        **said,
    }


def device_properties() -> dict[str, Any]:
    """What the CUDA runtime says of device 0 (the worker has a context anyway)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    try:
        bus = cupy.cuda.Device(0).pci_bus_id
    except Exception:  # an old CuPy: NVML's index 0 is used instead
        bus = ""
    return {
        "pci_bus_id": bus,
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "sm_count": int(props["multiProcessorCount"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "l2_bytes": int(props.get("l2CacheSize", 0)),
        "cuda_runtime_version": cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
        "cuda_driver_version": cuda_version(cupy.cuda.runtime.driverGetVersion()),
        "cupy_version": cupy.__version__,
    }


def _device_or_why() -> dict[str, Any]:
    try:
        return device_properties()
    except ImportError as exc:
        return {"unavailable": f"CuPy is not installed ({exc})"}
    except Exception as exc:  # no driver, no device: CuPy says which
        return {"unavailable": f"{type(exc).__name__}: {exc}"}


CHECK_FIELDS = ("passed", "error_norm", "tolerance", "norm", "precision", "unwritten")


def normalize_check(result: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN or infinity: a non-finite error becomes null, which never passes."""
    out = dict(result)
    error = out.get("error_norm")
    if error is None or not math.isfinite(float(error)):
        out["error_norm"], out["passed"] = None, False
    else:
        out["error_norm"] = float(error)
    out["passed"] = bool(out["passed"])
    out["unwritten"] = int(out.get("unwritten", 0))
    return {k: out[k] for k in (*CHECK_FIELDS, "reference") if k in out}


def handlers(
    config: dict[str, Any], ranges: Any, workloads: dict[str, Any], recorder: Any = None
) -> Callable[[Any, int], dict[str, Any]]:
    """What the worker does to one workload (and its index in the run) in this mode."""
    mode, device = config["mode"], config["device"]
    seed = int(config.get("seed", 0))
    if mode == "check":
        check = _import(config["check"]) if config.get("check") else None
        kept = References.from_env()

        def checked(w: Any, _: int) -> dict[str, Any]:
            result = normalize_check(
                check(w) if check else generic_check(w, seed, kept, config["root"])
            )
            if recorder is not None and result["passed"]:  # a check on a GPU, signatures on
                result["signature"] = launch_record.launch_signature(w, recorder)
                if isinstance(recorder, launch_record.LaunchRecorder) and recorder.launched:
                    result["compiled"] = compiled_kernels(recorder.launched)
            return result

        return checked
    if mode == "time":
        timing = Timing(**config.get("timing", {}))
        timers = make_timers(device)
        default = timing.method or ("cuda_events" if device == "cuda" else "host")
        if device == "cuda":
            gpuinfo.bind(device_properties()["pci_bus_id"])
        watch = gpuinfo.ClockWatch(enabled=device == "cuda")
        traced = _timeline_tags(config) if seed == 0 else set()
        inputs = timing_inputs(device)
        return lambda w, _: time_workload(
            w,
            timers,
            workload_method(w, default),
            timing,
            seed,
            watch,
            bool(traced & set(w.tags)),
            inputs,
        )
    if mode == "timeline":  # one training step's kernels, traced (see runner.profile.timeline)
        from runner.measure.sampling import trace_workload

        tracer, steps = config.get("tracer", "cupti"), int(config.get("steps", 0))
        inputs = timing_inputs(device)
        return lambda w, _: trace_workload(w, seed, tracer, steps, inputs)
    if mode == "profile":  # one launch per workload, under ncu (see runner.profile.ncu_pass)
        from runner.profile.ncu_pass import Launcher

        return Launcher([workloads[i] for i in config["ids"]], seed, ranges, config.get("inputs"))
    raise ValueError(f"unknown worker mode {mode!r}")


def _timeline_tags(config: dict[str, Any]) -> set[str]:
    """The suite's timeline tags (kernelwatch.toml): the first timing process traces those
    workloads' kernels after their samples, which saves the timeline a process of its own."""
    if config["device"] != "cuda":
        return set()
    try:
        return set(load_suite(Path(config["root"])).timeline)
    except (SuiteError, OSError):
        return set()


REQUIRED = ("id", "name", "params", "kernels", "tags", "precision", "tolerance", "flops",
            "bytes", "prepare")  # fmt: skip


class SuiteProblem(Exception):
    """The suite's workloads cannot be had: one line saying what to fix."""


TIMING_METHODS = (None, "cuda_events", "cupti", "host")


def _check_fields(w: Any) -> None:
    """SuiteProblem where a workload's declared fields cannot be used as they are."""
    for field, example in (("kernels", "('scale_rows',)"), ("tags", "('smoke',)")):
        value = getattr(w, field)
        names = list(value) if isinstance(value, list | tuple | set | frozenset) else None
        if names is None or not all(isinstance(n, str) and n for n in names):
            raise SuiteProblem(f"workload {w.id!r}: {field} {value!r} is not a tuple of names "
                               f"(a string is one name: write {example})")  # fmt: skip
    try:
        tolerance = float(w.tolerance)
    except (TypeError, ValueError):
        tolerance = math.nan
    if not math.isfinite(tolerance) or tolerance < 0:
        raise SuiteProblem(f"workload {w.id!r}: tolerance {w.tolerance!r} is not a number >= 0 "
                           "(the relative L2 error that still passes, e.g. 1e-6)")  # fmt: skip
    try:
        json.dumps(dict(w.params), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SuiteProblem(f"workload {w.id!r}: params {w.params!r} are not JSON (numbers, "
                           f"strings, booleans, lists of them): {exc}") from None  # fmt: skip
    method = getattr(w, "timing_method", None)
    if method not in TIMING_METHODS:
        raise SuiteProblem(f"workload {w.id!r}: timing_method {method!r} is none of "
                           f"{[m for m in TIMING_METHODS if m]}")  # fmt: skip


def suite_workloads(ref: str) -> dict[str, Any]:
    """The suite's workloads by id, or SuiteProblem naming what is wrong with its module."""
    module_name = ref.partition(":")[0]
    try:
        module = _import(ref)
    except Exception as exc:  # ImportError, or whatever its import raised
        why = _one_line(exc)
        raise SuiteProblem(f"the workloads module {module_name!r} (kernelwatch.toml [suite] "
                           f"workloads) cannot be imported: {why}") from None  # fmt: skip
    if not callable(getattr(module, "all_workloads", None)):
        raise SuiteProblem(f"the workloads module {module_name!r} has no all_workloads(): "
                           "define it to return the suite's workloads")  # fmt: skip
    try:
        listed = list(module.all_workloads())
    except Exception as exc:
        raise SuiteProblem(f"all_workloads() of {module_name!r} raised {_one_line(exc)}") from None
    workloads: dict[str, Any] = {}
    for w in listed:
        if hasattr(w, "id") and all(hasattr(w, a) for a in ("tolerance", "params")):
            _check_fields(w)
        missing = [a for a in REQUIRED if not hasattr(w, a)]
        if missing or not callable(getattr(w, "prepare", None)):
            label = getattr(w, "id", repr(w))
            raise SuiteProblem(f"workload {label!r} has no {', '.join(missing) or 'prepare()'}: a "
                               f"workload needs {', '.join(REQUIRED)}(seed)")  # fmt: skip
        if w.id in workloads:
            raise SuiteProblem(f"workload id {w.id!r} is given twice: every id must be unique "
                               "(it names the workload's series)")  # fmt: skip
        workloads[w.id] = w
    return workloads


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def warm_up(config: dict[str, Any], ranges: Any) -> Callable[[Any, int], dict[str, Any]] | None:
    """What a worker started ahead of its phase does before its ids come (runner.measure.phase.
    WarmWorkers, runner.profile.ncu_pass.NcuPass): CuPy and the CUDA context on a GPU, the
    frameworks the suite imports for a check or timing worker (runner.measure.preload), a timing
    worker's whole handler (timers, flush buffers, the clock watch), a profile worker's one
    warm-up launch. Nothing of the suite's own code: the build may still be writing it. With
    "context": false only the frameworks; the rest waits for the ids
    (runner.measure.phase.WarmWorkers)."""
    context = config.get("context", True)
    if config["device"] == "cuda" and context:
        import cupy

        cupy.cuda.runtime.free(0)  # creates the context
    preload(config.get("preload", []))  # torch: what the first prepare paid for
    if config["mode"] == "time" and context:
        return handlers(config, ranges, {})
    if config["mode"] == "profile":  # under ncu: its setup at the first profiled kernel, now
        from runner.profile.ncu_pass import warm_up_profiler

        warm_up_profiler()
    return None


def main(config_path: str, protocol: Protocol | None = None) -> int:
    config = json.loads(Path(config_path).read_text())
    protocol = protocol or Protocol()
    ranges, handle = None, None
    # Before anything loads a module: CUPTI hands each loaded module to the recorder.
    recorder = launch_record.recorder_or_why() \
        if config["mode"] == "check" and config["device"] == "cuda" else None  # fmt: skip
    if config.get("wait"):
        ranges = _nvtx(config["device"])
        handle = warm_up(config, ranges)
        protocol.send(event="ready")  # runner.measure.phase.WarmWorkers.ready
        line = sys.stdin.readline()
        if not line.strip():
            return 0  # not needed after all
        config = {**config, "ids": list(json.loads(line)["ids"])}
    sys.path.insert(0, config["root"])
    try:
        workloads = suite_workloads(config["workloads"])
    except SuiteProblem as exc:
        protocol.send(event="suite_error", error=str(exc))
        return 2
    if config["mode"] == "list":  # listing a suite needs no GPU: say why there is none instead
        device = _device_or_why() if config["device"] == "cuda" else {}
        protocol.send(
            event="list", workloads=[describe(w) for w in workloads.values()], device=device
        )
        return 0
    if ranges is None:
        ranges = _nvtx(config["device"])
    if handle is None:
        handle = handlers(config, ranges, workloads, recorder)
    for index, wid in enumerate(config["ids"]):
        protocol.send(event="start", id=wid)
        try:
            w = workloads[wid]
            ranges.push(wid)
            try:
                result = handle(w, index)
            finally:
                ranges.pop()
            protocol.send(event="result", id=wid, result=result)
        except Exception:
            error = traceback.format_exc()[-4000:]
            lost = cuda_context_lost(config["device"])
            if lost is None:
                protocol.send(event="error", id=wid, error=error)
                continue
            # A sticky CUDA error (an illegal address, a trap, ...) kills this process's
            # context: every later workload here would fail with it. Report this one as a
            # crash and end the process; the parent runs the rest in a fresh one.
            protocol.send(
                event="error",
                id=wid,
                status="crashed",
                error=f"{error}\nthe CUDA context is lost ({lost}): worker process ended",
            )
            protocol.out.flush()
            os._exit(3)  # no interpreter teardown: CuPy's frees would fail on the dead context
    # A profile's reuse depends on the worktree's Python this process ran (runner.profile.reuse)
    files = imported_files(config["root"]) if config["mode"] == "profile" else []
    protocol.send(event="done", files=files)
    return 0


def imported_files(root: str) -> list[str]:
    """The Python files under `root` (the suite's worktree) that this process imported, as
    paths in it: what its launches ran besides the kernels (runner.profile.reuse)."""
    base = Path(root).resolve()
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or not str(path).endswith(".py"):
            continue
        try:
            found.add(Path(path).resolve().relative_to(base).as_posix())
        except ValueError:
            continue  # outside the worktree: the host's packages
    return sorted(found)


def cuda_context_lost(device: str) -> str | None:
    """After a workload raised: the CUDA error the context is stuck on, or None while it
    still works (a sticky error makes every later call, a synchronize included, fail)."""
    if device != "cuda":
        return None
    try:
        import cupy
    except ImportError:
        return None
    try:
        cupy.cuda.runtime.deviceSynchronize()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class _NoRanges:
    available = False

    def push(self, name: str) -> None:
        pass

    def pop(self) -> None:
        pass


class _NvtxRanges:
    """NVTX ranges name each workload in Nsight timelines."""

    available = True

    def __init__(self) -> None:
        from cupy.cuda import nvtx

        if not getattr(nvtx, "available", True):
            raise RuntimeError("CuPy was built without NVTX")
        self.nvtx = nvtx

    def push(self, name: str) -> None:
        self.nvtx.RangePush(name)

    def pop(self) -> None:
        self.nvtx.RangePop()


def _nvtx(device: str) -> _NoRanges | _NvtxRanges:
    if device != "cuda":
        return _NoRanges()
    try:
        return _NvtxRanges()
    except Exception:  # NVTX is a nicety; its absence must not stop a measurement
        return _NoRanges()

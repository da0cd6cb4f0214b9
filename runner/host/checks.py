"""Whether this host can run jobs: one check per piece of the GPU stack, each ok, missing or wrong
with the fix. `kernelwatch-runner doctor` prints them; `run` refuses a CUDA suite in one line when
the GPU stack is not there. Standard library only (CuPy is probed in a child process: a broken
CUDA install must not take the runner down with it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.host.tools import find_nvcc, find_tool

DEFAULT_CACHE = Path.home() / ".cache" / "kernelwatch"  # clones, worktrees, the spool
MIN_FREE_BYTES = 5 << 30  # a clone, a worktree and a build of a suite, with room to spare
CUPY_INSTALL = "pip install 'kernelwatch[runner-cuda13]' (CUDA 13 driver) or '[runner-cuda12]'"
NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")  # the loaded driver's module options
COUNTERS_FIX = (
    "let every user read GPU counters: echo 'options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/nvidia-profiling.conf, "
    "then reboot (or run the agent as root)"
)

# What the child prints: the GPU as CUDA sees it, or why it cannot.
_PROBE = r"""
import json
try:
    import cupy
except Exception as exc:
    print(json.dumps({"missing": f"{type(exc).__name__}: {exc}"})); raise SystemExit
try:
    rt = cupy.cuda.runtime
    count = rt.getDeviceCount()
    props = rt.getDeviceProperties(0) if count else {}
    free, total = cupy.cuda.Device(0).mem_info if count else (0, 0)
    name = props.get("name", b"")
    print(json.dumps({
        "count": count, "name": name.decode() if isinstance(name, bytes) else str(name),
        "cc": f"{props.get('major', 0)}.{props.get('minor', 0)}", "free": free, "total": total,
        "runtime": rt.runtimeGetVersion(), "driver": rt.driverGetVersion(),
        "cupy": cupy.__version__,
    }))
except Exception as exc:
    print(json.dumps({"wrong": f"{type(exc).__name__}: {exc}"}))
"""


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # "ok", "missing" or "wrong"
    detail: str
    fix: str = ""
    required: bool = True

    @property
    def ok(self) -> bool:
        return self.state == "ok" or not self.required

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "state": self.state, "detail": self.detail, "fix": self.fix,
                "required": self.required}  # fmt: skip

    @property
    def line(self) -> str:
        fix = f" -> {self.fix}" if self.fix and self.state != "ok" else ""
        optional = "" if self.required or self.state == "ok" else " (optional)"
        return f"{self.state:<7} {self.name:<12} {self.detail}{optional}{fix}"


class HostError(RuntimeError):
    """This host cannot run the suite: one line says what is missing."""


def probe_gpu(python: str = sys.executable, timeout: float = 60.0) -> dict:
    """What CuPy and the CUDA runtime say of GPU 0, from a child process."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                              timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"wrong": f"the CUDA probe did not answer within {timeout:g} s"}
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else {"wrong": done.stderr.strip()[-300:]}
    except json.JSONDecodeError:
        return {"wrong": lines[-1][-300:]}


# What the CUDA runtime says where a host has CuPy and no working driver.
DRIVER_ERRORS = {
    "cudaErrorInsufficientDriver": "no NVIDIA driver, or one older than CuPy's CUDA runtime",
    "cudaErrorNoDevice": "no NVIDIA GPU visible to this process",
    "CUDA_ERROR_NO_DEVICE": "no NVIDIA GPU visible to this process",
    "libcuda.so": "no NVIDIA driver (libcuda.so cannot be loaded)",
}


def gpu_checks(gpu: dict) -> list[Check]:
    """CuPy, the GPU and the CUDA versions, from `probe_gpu`'s answer."""
    if "missing" in gpu:
        return [Check("cupy", "missing", gpu["missing"], CUPY_INSTALL)]
    if "wrong" in gpu:
        said = str(gpu["wrong"])
        for code, words in DRIVER_ERRORS.items():
            if code in said:  # CUDA's error name, in words a person acts on
                return [Check("gpu", "missing", f"{words} ({code})",
                              "install the NVIDIA driver (nvidia-smi must answer)")]  # fmt: skip
        return [Check("gpu", "wrong", said, "check the NVIDIA driver: nvidia-smi")]
    if not gpu.get("count"):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        hint = f"CUDA_VISIBLE_DEVICES={visible!r} hides them" if visible is not None else (
            "install the NVIDIA driver")  # fmt: skip
        return [Check("gpu", "missing", "no CUDA device", hint)]
    runtime, driver = gpu["runtime"] // 1000, gpu["driver"] // 1000
    memory = f"{gpu['free'] / 2**30:.1f} of {gpu['total'] / 2**30:.1f} GiB free"
    checks = [
        Check("cupy", "ok", f"CuPy {gpu['cupy']} (CUDA runtime {cuda_version(gpu['runtime'])})"),
        Check("gpu", "ok", f"{gpu['name']}, compute capability {gpu['cc']}, {memory}"),
    ]
    if runtime > driver:
        newer = f"CuPy's CUDA {runtime} is newer than the driver's CUDA {driver}"
        checks.append(Check("cuda", "wrong", newer, f"install kernelwatch[runner-cuda{driver}]"))
    else:
        checks.append(Check("cuda", "ok", f"driver CUDA {cuda_version(gpu['driver'])}"))
    return checks


def cuda_version(number: int) -> str:
    """13020 -> "13.2" (CUDA's runtime and driver version numbers)."""
    return f"{number // 1000}.{number % 1000 // 10}"


def tool_check(name: str, env: str, candidates: tuple[str, ...], fix: str, required: bool) -> Check:
    where = f"${env}, the PATH, {', '.join(candidates)}"
    return _found(name, find_tool(name, env, candidates), where, fix, required)


def _found(name: str, path: str | None, where: str, fix: str, required: bool) -> Check:
    if path is None:
        return Check(name, "missing", f"not found ({where})", fix, required)
    return Check(name, "ok", path, required=required)


def module_check(module: str, fix: str, required: bool = False) -> Check:
    import importlib.util

    if importlib.util.find_spec(module.split(".")[0]) is None:
        return Check(module, "missing", "not importable", fix, required)
    return Check(module, "ok", "importable", required=required)


def counters_check(params: Path = NVIDIA_PARAMS, euid: int | None = None) -> Check:
    """Whether ncu may read the GPU's performance counters: the driver restricts them to admin
    users by default on many distributions, and ncu then fails with ERR_NVGPUCTRPERM."""
    euid = os.geteuid() if euid is None else euid
    try:
        text = params.read_text()
    except OSError as exc:
        detail = f"cannot tell ({params}: {exc.strerror or exc})"
        return Check("counters", "missing", detail, COUNTERS_FIX, required=False)
    restricted = any(
        line.split(":", 1)[0].strip() == "RestrictProfilingToAdminUsers"
        and line.split(":", 1)[1].strip() not in ("0", "")
        for line in text.splitlines()
        if ":" in line
    )
    if restricted and euid != 0:
        detail = (
            "only admin users may read GPU counters (RestrictProfilingToAdminUsers): ncu would "
            "fail with ERR_NVGPUCTRPERM"
        )
        return Check("counters", "wrong", detail, COUNTERS_FIX, required=False)
    who = "as root" if restricted else "for every user"
    return Check("counters", "ok", f"ncu may read the GPU's counters ({who})", required=False)


def disk_check(folder: Path, minimum: int = MIN_FREE_BYTES) -> Check:
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(existing).free
    detail = f"{free / 2**30:.1f} GiB free under {existing}"
    if free < minimum:
        fix = f"free {minimum / 2**30:.0f} GiB for clones and builds"
        return Check("disk", "wrong", detail, fix)
    return Check("disk", "ok", detail)


def agent_checks(
    device: str, cache: Path, gpu: Callable[[], dict] | None = None, everything: bool = False
) -> list[Check]:
    """What a runner of `device` suites needs ("cuda": the GPU stack too); `everything` adds
    the optional tools (nvcc, ncu, cupti-python) that doctor reports."""
    from runner.host.tools import NCU_CANDIDATES

    optional = [
        _found("nvcc", find_nvcc(), "$NVCC, the PATH, $CUDA_HOME or /usr/local/cuda/bin",
               "install the CUDA toolkit (suites build their kernels with nvcc)", False),
        tool_check("ncu", "KERNELWATCH_NCU", NCU_CANDIDATES,
                   "install Nsight Compute: without it runs carry no counters", False),
        counters_check(),
        module_check("cupti", "pip install cupti-python (kernel timelines, short launches)"),
        *framework_checks(),
    ]  # fmt: skip
    return [
        module_check("numpy", "pip install numpy (the runner's statistics)", required=True),
        *(gpu_checks((gpu or probe_gpu)()) if device == "cuda" else []),
        *(optional if everything and device == "cuda" else []),
        _found("git", shutil.which("git"), "the PATH, where checkouts look", "install git", True),
        disk_check(cache),
    ]


def framework_checks() -> list[Check]:
    """The suite frameworks installed here, with their versions (none is needed: a suite that
    imports one brings it)."""
    from runner.host.environment import framework_versions

    return [
        Check(name, "ok", f"{version} (recorded in each run's environment)", required=False)
        for name, version in framework_versions().items()
    ]


def service_checks(server: str, token: str | None) -> list[Check]:
    """The service answers /healthz, and takes the runner token (a heartbeat)."""
    import httpx

    base = server.rstrip("/")
    try:
        answer = httpx.get(f"{base}/healthz", timeout=10)
    except httpx.HTTPError as exc:
        return [Check("service", "missing", f"{base}: {type(exc).__name__}: {exc}",
                      "check --server and that the service runs")]  # fmt: skip
    if answer.status_code != 200:
        return [Check("service", "wrong", f"{base}/healthz answered {answer.status_code}",
                      "look at the service's log")]  # fmt: skip
    checks = [Check("service", "ok", f"{base} answers")]
    create = "kernelwatch runner-token create NAME (on the service host)"
    if not token:
        checks.append(Check("token", "missing", "no --token nor $KERNELWATCH_RUNNER_TOKEN", create))
        return checks
    beat = httpx.post(f"{base}/api/v1/runners/heartbeat", timeout=10,
                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    if beat.status_code != 200:
        checks.append(Check("token", "wrong", f"the service answered {beat.status_code}", create))
    else:
        checks.append(Check("token", "ok", f"taken: runner {beat.json().get('name', '?')}"))
    return checks


def can_run(checks: list[Check]) -> bool:
    return all(c.state == "ok" for c in checks if c.required)


def gpu_problem(gpu: dict) -> Check | None:
    """Why CUDA suites cannot run here, from `probe_gpu`'s answer (doctor's first failing GPU
    line), or None when they can: the agent's start and every CUDA job ask the same."""
    return next((check for check in gpu_checks(gpu) if check.state != "ok"), None)


def require_gpu(suite_name: str, gpu: Callable[[], dict] | None = None) -> None:
    """HostError naming the missing piece when this host cannot run a CUDA suite."""
    if (check := gpu_problem((gpu or probe_gpu)())) is not None:
        raise HostError(f"this host cannot run the CUDA suite {suite_name!r}: {check.name} "
                        f"{check.state}: {check.detail} ({check.fix})")  # fmt: skip

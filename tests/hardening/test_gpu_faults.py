"""Kernel faults on the GPU end as clear failed results, and the agent goes on serving.

A temporary git repository holds a small CUDA suite in the suite protocol (`kernelwatch.toml`,
a workloads module, a build that compiles `faults.cu` with nvcc; NVRTC through CuPy where nvcc
is missing or fails). Four workloads of 1 Mi floats, each a kernel `y = 2 x`:

- `scale`: the good one;
- `spin`: waits on a flag in global memory that nothing ever sets (a kernel that never ends);
- `wild_store`: writes through a pointer to an unmapped address (an illegal address, a sticky
  CUDA error that leaves its process's context dead);
- `nan_out`: writes NaN (its correctness check must fail).

The first commit has them broken; the second (`BROKEN = False` and a README line) repairs them.
A real `kernelwatch serve` (SQLite), a signed push per commit and a real `kernelwatch-runner
agent`: the second push comes while the agent works on the first job. The first document must
arrive with `spin` timed out (killed at the suite's 15 s cap), `wild_store` crashed with the CUDA
error's text, `nan_out` correctness-failed with the reason, and `scale` measured normally; the
agent must still be alive and run the second job to success, all four workloads fine; nothing
may be left in the spool.

The workloads are listed wild_store, spin, nan_out, scale, so that the correctness workers (3
at a time, split evenly) put `scale` in the same process right after `wild_store`: a worker that
went on in a dead context would fail it (runner.worker ends such a worker; the parent runs
the rest in a fresh one).

Marked `gpu`: skipped with the reason where CuPy or a GPU is missing (tests/conftest.py); CuPy is
imported only by the suite's own processes, so the module collects anywhere.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import agent_process, job, push, service_process, tail, wait_for
from tests.runner.gitrepo import commit_all, git

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(280)]

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "acme/gpu-faults"
TIMEOUT_SECONDS = 15  # the suite's per-workload cap: the hung kernel is killed after this
N = 1 << 20

SUITE_TOML = f"""\
# A CUDA suite whose kernels hang, fault and return NaN while faults.BROKEN is true.
[suite]
name = "gpu-faults"
workloads = "faults"
device = "cuda"
build = ["{{python}} build_faults.py {{build_dir}}"]

[timing]
processes = 2
min_samples = 10
max_samples = 300
max_seconds = 0.3
target_rel_spread = 0.05
timeout_seconds = {TIMEOUT_SECONDS}
warmup_seconds = 0.05
"""

FAULTS_CU = """\
// y = 2 x, four ways. The extra argument of the last three breaks them.
extern "C" __global__ void kw_scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void kw_spin(const float* x, float* y, int n, const int* go) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (*(const volatile int*)go == 0) {
  }  // broken: *go is 0 and nothing ever sets it
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" __global__ void kw_wild_store(const float* x, float* y, int n,
                                         unsigned long long wild) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float* out = wild ? reinterpret_cast<float*>(wild) : y;  // broken: an unmapped address
  if (i < n) out[i] = 2.0f * x[i];
}

extern "C" __global__ void kw_nan(const float* x, float* y, int n, int broken) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = broken ? __int_as_float(0x7fc00000) : 2.0f * x[i];  // broken: NaN
}
"""

BUILD_PY = '''\
"""Compile faults.cu for this GPU with nvcc (ptxas -v reports each kernel's resources).
Without nvcc, or where it fails, the workloads compile the source with NVRTC instead."""

import shutil
import re
import subprocess
import sys
from pathlib import Path

out = Path(sys.argv[1]) / "faults.cubin"
nvcc = shutil.which("nvcc") or next(
    (p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).is_file()), None
)
if nvcc is None:
    print("nvcc not found: the workloads compile faults.cu with NVRTC")
    sys.exit(0)
import cupy

arch = "sm_" + cupy.cuda.Device(0).compute_capability
cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-o", str(out), "faults.cu"]
done = subprocess.run(cmd, capture_output=True, text=True)
print(" ".join(cmd))
print(done.stdout + done.stderr)
if done.returncode != 0:
    out.unlink(missing_ok=True)
    print(f"nvcc failed ({done.returncode}): the workloads compile faults.cu with NVRTC")
'''

WORKLOADS_PY = f'''\
"""Workloads of the fault suite: see faults.cu. BROKEN is what the fixing commit changes."""

import os
from pathlib import Path

import numpy as np

BROKEN = True
N = {N}
WILD_ADDRESS = 0x10  # nothing is ever mapped near 0: an illegal address
POISON_BITS = 0x7FD15EA5
_module = None


def module():
    """The kernels: the build's cubin, else faults.cu through NVRTC."""
    global _module
    if _module is None:
        import cupy

        build_dir = os.environ.get("KERNELWATCH_BUILD_DIR")
        cubin = Path(build_dir) / "faults.cubin" if build_dir else None
        if cubin is not None and cubin.is_file():
            _module = cupy.RawModule(path=str(cubin))
        else:
            _module = cupy.RawModule(code=Path(__file__).with_name("faults.cu").read_text())
    return _module


class Instance:
    def __init__(self, workload, seed):
        import cupy

        self.cp = cupy
        self.x_host = np.random.default_rng(seed).standard_normal(N, dtype=np.float32)
        self.x = cupy.asarray(self.x_host)
        self.y = cupy.empty(N, dtype=cupy.float32)
        self.go = cupy.asarray(np.array([0 if BROKEN else 1], dtype=np.int32))
        extra = {{
            "scale": (),
            "spin": (self.go,),
            "wild_store": (np.uint64(WILD_ADDRESS if BROKEN else 0),),
            "nan_out": (np.int32(1 if BROKEN else 0),),
        }}[workload.name]
        self.args = (self.x, self.y, np.int32(N), *extra)
        self.kernel = module().get_function(workload.kernels[0])

    def launch(self):
        self.kernel(((N + 255) // 256,), (256,), self.args)

    def poison(self):
        self.y.view(self.cp.uint32).fill(POISON_BITS)

    def fetch(self):
        return {{"y": self.cp.asnumpy(self.y)}}

    def reference(self):
        return {{"y": 2.0 * self.x_host.astype(np.float64)}}

    def reset(self):
        pass

    def close(self):
        self.x = self.y = self.go = self.args = None


class Workload:
    precision = "fp32"
    tolerance = 1e-6

    def __init__(self, name, kernel):
        self.name, self.kernels = name, (kernel,)
        self.params, self.tags = {{"n": N}}, ("faults",)
        self.id = f"{{name}}[n={{N}}]"
        self.flops, self.bytes = N, 8 * N

    def prepare(self, seed=0):
        return Instance(self, seed)


def all_workloads():
    # This order puts scale in wild_store's correctness worker, right after it.
    return [
        Workload("wild_store", "kw_wild_store"),
        Workload("spin", "kw_spin"),
        Workload("nan_out", "kw_nan"),
        Workload("scale", "kw_scale"),
    ]
'''


def _python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def fault_suite_repo(path: Path) -> tuple[Path, str, str]:
    """The suite with its kernels broken, then a commit that repairs them."""
    path.mkdir()
    (path / "kernelwatch.toml").write_text(SUITE_TOML)
    (path / "faults.cu").write_text(FAULTS_CU)
    (path / "build_faults.py").write_text(BUILD_PY)
    (path / "faults.py").write_text(WORKLOADS_PY)
    (path / "README.md").write_text("# gpu-faults\n\nKernels that hang, fault and return NaN.\n")
    git(path, "init", "-q", "-b", "main")
    broken = commit_all(path, "faults: a hang, an illegal address and a NaN")
    source = (path / "faults.py").read_text()
    assert "BROKEN = True\n" in source
    (path / "faults.py").write_text(source.replace("BROKEN = True\n", "BROKEN = False\n"))
    with (path / "README.md").open("a") as readme:
        readme.write("\nRepaired: every kernel computes y = 2 x.\n")
    fixed = commit_all(path, "faults: repair the kernels")
    return path, broken, fixed


@pytest.fixture
def service(db_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    pytest.importorskip("fastapi", reason="the service's dependencies are not installed")
    with service_process(db_url, tmp_path, _python("service.cli"), cwd=ROOT) as running:
        yield running


def _finished(url: str, job_id: int) -> bool:
    state = job(url, job_id)["state"]
    assert state not in ("failed", "cancelled"), job(url, job_id)
    return state == "succeeded"


def _workloads(url: str, sha: str) -> tuple[dict, dict[str, dict]]:
    metrics = httpx.get(f"{url}/api/v1/commits/{sha}/metrics", params={"repository": REPOSITORY})
    assert metrics.status_code == 200, metrics.text
    body = metrics.json()
    return body, {w["workload"]: w for w in body["workloads"]}


def _duration(workload: dict) -> dict:
    """The workload's one timed metric (the median and its statistics), checked for sanity."""
    assert workload["status"] == "ok" and workload["correctness"]["passed"], workload
    (kernel,) = [k for k in workload["kernels"] if k["metrics"]]
    metric = kernel["metrics"][0]
    assert metric["unit"] == "us" and metric["method"] in ("cupti", "cuda_events"), metric
    # 8 MB moved: a few us. A hung kernel still holding the GPU would time-slice it to ms.
    assert 0.5 < metric["statistics"]["median"] < 500, metric
    assert metric["statistics"]["n"] >= 10, metric
    return metric


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_hang_fault_and_nan_fail_cleanly_and_the_agent_serves_on(service, tmp_path: Path) -> None:
    url, env = service
    repo, broken, fixed = fault_suite_repo(tmp_path / "repo")
    token = subprocess.run(
        _python("service.cli", "runner-token", "create", "gpu-runner", "--labels", "gpu=any"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with agent_process(
        _python("runner.cli"), url, token, tmp_path, env, "--poll", "0.5", cwd=ROOT
    ) as agent:
        try:
            (job1,) = push(url, repo, REPOSITORY, broken, [broken])
            # The second push comes while the agent works on the first job (a push to the
            # branch cancels its still-queued jobs, so not before the first is claimed).
            wait_for(lambda: job(url, job1)["state"] != "queued", agent, timeout=60)
            (job2,) = push(url, repo, REPOSITORY, fixed, [fixed])
            assert job(url, job1)["state"] in ("running", "succeeded"), job(url, job1)
            wait_for(lambda: _finished(url, job1), agent, timeout=150)
            assert agent.poll() is None, "the agent died with the faulting kernels"

            # The first document: posted, failed, each fault clear.
            body, workloads = _workloads(url, broken)
            assert [r["status"] for r in body["runs"]] == ["failed"], body["runs"]
            assert set(workloads) == {"scale", "spin", "wild_store", "nan_out"}, sorted(workloads)
            spin = workloads["spin"]
            assert spin["status"] == "timeout", spin
            assert f"killed after {TIMEOUT_SECONDS} s" in spin["error"], spin["error"]
            wild = workloads["wild_store"]
            assert wild["status"] == "crashed", wild
            assert "illegal memory access" in wild["error"], wild["error"]
            assert "the CUDA context is lost" in wild["error"], wild["error"]
            # The runtime's or the driver's name of the error, whichever call met it first.
            assert re.search(r"cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS", wild["error"])
            nan = workloads["nan_out"]
            assert nan["status"] == "correctness_failed", nan
            assert "not finite" in nan["error"], nan["error"]
            assert nan["correctness"]["passed"] is False, nan["correctness"]
            assert nan["correctness"]["error_norm"] is None, nan["correctness"]
            assert nan["correctness"]["unwritten"] == N, nan["correctness"]
            for failed in (spin, wild, nan):
                assert not any(k["metrics"] for k in failed["kernels"]), failed  # never timed
            first = _duration(workloads["scale"])

            # The same agent serves the next job, on a GPU the faults left healthy.
            wait_for(lambda: _finished(url, job2), agent, timeout=120)
            assert agent.poll() is None, "the agent died after the faulting job"
            body, workloads = _workloads(url, fixed)
            assert [r["status"] for r in body["runs"]] == ["succeeded"], body["runs"]
            assert set(workloads) == {"scale", "spin", "wild_store", "nan_out"}, sorted(workloads)
            durations = {name: _duration(w) for name, w in workloads.items()}
            ratio = first["statistics"]["median"] / durations["scale"]["statistics"]["median"]
            assert 0.5 < ratio < 2, (first, durations["scale"])
            runners = httpx.get(f"{url}/api/v1/runners").json()
            assert [r["current_job_id"] for r in runners] == [None], runners
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nagent log:\n{tail(tmp_path / 'agent.log', 12000)}"
                f"\nservice log:\n{tail(tmp_path / 'service.log', 3000)}"
            ) from exc
    assert agent.returncode == 0, tail(tmp_path / "agent.log")
    spool = tmp_path / "spool"
    assert not list(spool.glob("*.json")), sorted(spool.iterdir())
    assert not list(spool.glob("rejected/*")), sorted((spool / "rejected").iterdir())

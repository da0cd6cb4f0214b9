"""runner.worker.launch_record on a real GPU, in a process of its own (CUPTI takes one
subscriber a process, and the recorder must be there before the first module loads, as in a
check worker): the kernels' launch configuration, their code from the loaded module, the inputs
by checksum, each element changed in turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json
from runner.worker.launch_record import LaunchRecorder, signature
recorder = LaunchRecorder()  # before CuPy loads any module
import cupy as cp

SOURCE = ('extern "C" __global__ void kw_probe(const float* x, float* y, int n) {'
          ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * %s; }')

class Instance:
    def __init__(self, factor, fill, block=256):
        self.kernel = cp.RawModule(code=SOURCE % factor).get_function("kw_probe")
        self.n, self.block = 1 << 20, block
        self.x = cp.full(self.n, fill, cp.float32)
        self.y = cp.empty_like(self.x)
    def launch(self):
        grid = (self.n + self.block - 1) // self.block
        self.kernel((grid,), (self.block,), (self.x, self.y, cp.int32(self.n)))

out = []
for factor, fill, block in (("2.0f", 1.0, 256), ("2.0f", 1.0, 256), ("2.0f", 5.0, 256),
                            ("2.0f", 1.0, 128), ("3.0f", 1.0, 256)):
    loaded = len(recorder.images)
    out.append(signature(Instance(factor, fill, block), recorder,
                         cp.cuda.Device().synchronize, loaded))
print(json.dumps(out))
"""


def test_a_launchs_signature_on_the_gpu_changes_with_each_element_and_only_then() -> None:
    pytest.importorskip("cupti")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    base, again, data, block, code = json.loads(done.stdout.splitlines()[-1])
    (kernel,) = base["kernels"]
    assert kernel["kernel"] == "kw_probe" and kernel["grid"] == [4096, 1, 1]
    assert kernel["block"] == [256, 1, 1] and kernel["registers"] > 0
    assert base["code"]["kw_probe"]  # found in the module CuPy loaded
    assert set(base["inputs"]) == {"x"} and set(base["written"]) == {"y"}
    assert base["scalars"] == {"block": "256", "n": "1048576"}
    assert again == base  # the same launch prepared again: the same signature
    assert data["inputs"] != base["inputs"] and data["kernels"] == base["kernels"]
    assert block["kernels"] != base["kernels"] and block["code"] == base["code"]
    assert code["code"] != base["code"] and code["kernels"] == base["kernels"]

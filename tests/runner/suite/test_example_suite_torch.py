"""docs/example-suite-torch as docs/suites.md promises it: listed on a machine without torch or
Triton; on a GPU with them, every workload (a load_inline operator, a Triton kernel, a
torch.compile'd training step) correct and timed, and the generated kernels found by pattern."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "example-suite-torch"
RUNNER = Path(sys.executable).with_name("kernelwatch-runner")
SMOKE = ["scale_rows[cols=1024,rows=1024]", "softmax[cols=1024,rows=4096]",
         "mlp_step[batch=256,d_hidden=4096,d_in=1024]"]  # fmt: skip


def test_the_torch_example_lists_without_torch(tmp_path: Path) -> None:
    """Listed with a torch and a triton on the path that refuse to be imported: the listing
    never imports them (a runner host without them lists the suite)."""
    for name in ("torch", "triton"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('{name} imported')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([RUNNER, "list", "--repo", str(EXAMPLE), "--json"], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = {w["id"]: w for w in json.loads(done.stdout)}
    assert set(SMOKE) < set(listed)
    assert [w["id"] for w in listed.values() if "smoke" in w["tags"]] == SMOKE  # the default
    assert listed[SMOKE[0]]["kernels"] == ["scale_rows_kernel"]
    assert listed[SMOKE[1]]["kernels"] == ["softmax_kernel"]
    assert listed[SMOKE[1]]["timing_method"] == "cupti"
    assert listed[SMOKE[2]]["kernels"] == ["triton_*"]  # Inductor's generated names


@pytest.mark.gpu
def test_the_torch_example_is_correct_and_timed_on_a_gpu(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the torch example needs PyTorch")
    pytest.importorskip("triton", reason="the torch example needs Triton")
    from runner.measure.phase import run_phase
    from runner.suite.build import build_env
    from runner.suite.load import load_suite

    suite = load_suite(EXAMPLE)
    env = build_env(tmp_path / "build", tmp_path / "cache")
    checked = run_phase(suite, "check", SMOKE, env=env)
    for wid in SMOKE:
        outcome = checked.outcomes[wid]
        assert outcome.status == "ok" and outcome.result["passed"], outcome
    assert (tmp_path / "cache" / "builds" / "triton").is_dir()  # compiled into the runner's cache
    if pytest.importorskip("runner.worker.launch_record").enabled():
        # What the compiler made of each kernel: the autotuned softmax's warps, as Triton and
        # CUPTI saw them, and the config it chose; Inductor's kernels are Triton's too.
        compiled = {c["kernel"]: c for c in checked.outcomes[SMOKE[1]].result["compiled"]}
        softmax = compiled["softmax_kernel"]
        assert softmax["compiler"] == "triton", softmax
        assert softmax["threads"] == 32 * softmax["num_warps"], softmax
        assert f"num_warps: {softmax['num_warps']}" in softmax["config"], softmax
        assert softmax["target"].startswith("cuda:"), softmax
        # Inductor's kernels as CUPTI saw them (Triton's facts only where Inductor compiled
        # them in this process: one loaded from its cache by its own launcher has none).
        generated = checked.outcomes[SMOKE[2]].result["compiled"]
        assert any(c["kernel"].startswith("triton_") and c["threads"] > 0
                   for c in generated), generated  # fmt: skip
    timed = run_phase(suite, "time", SMOKE, env=env)
    for wid in SMOKE:
        outcome = timed.outcomes[wid]
        assert outcome.status == "ok", outcome
        assert min(outcome.result["samples"]) > 0
        # beside the duration: the peak memory PyTorch's allocator held during a launch
        assert outcome.result["peak_memory_bytes"] > 0, outcome.result


@pytest.mark.gpu
def test_each_version_of_the_operator_is_built_once(tmp_path: Path) -> None:
    """A confirmation or a bisection prepares two versions of the operator's source in turn: the
    second time each one loads what was built, it does not build again."""
    pytest.importorskip("torch", reason="the torch example needs PyTorch")
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    source = example / "torch_kernels" / "scale_rows.cu"
    versions = [source.read_text(), source.read_text() + "// another version\n"]
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "extensions")}
    script = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); "
        "from torch_kernels.workloads import ScaleRows; started = time.perf_counter(); "
        "ScaleRows(64, 64, ()).prepare(); print(time.perf_counter() - started)"
    )
    took = []
    for text in [*versions, *versions]:
        source.write_text(text)
        done = subprocess.run([sys.executable, "-c", script, str(example)], capture_output=True,
                              text=True, timeout=600, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        took.append(float(done.stdout.split()[-1]))
    built = sorted(p.name for p in (tmp_path / "extensions").iterdir())
    assert len(built) == 2 and all(n.startswith("kw_example_scale_rows_") for n in built), built
    assert max(took[2:]) < min(took[:2]) / 3, took  # loaded, not built again

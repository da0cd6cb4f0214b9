"""`python -m kernels.build --out DIR`: the runner's build step and what the workers load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.build import load_manifest
from runner.suite.build import _declared

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_build_writes_a_manifest_that_loads_back(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kernels.build", "--out", str(tmp_path), "--arch", "sm_90"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "build.json").read_text())
    names = {k["kernel"] for k in manifest["kernels"]}
    assert {"gemm_bias_act_fwd", "gemm_bwd_tn_dweight", "adamw_multi", "transpose_tiled"} <= names
    loaded = load_manifest(tmp_path)
    assert loaded is not None
    assert loaded.kernels["gemm_bias_act_fwd"].registers > 0
    resources = {k["kernel"]: k for k in _declared(tmp_path)}
    assert resources["gemm_bias_act_fwd"]["arch"] == "sm_90"
    assert (
        resources["gemm_bias_act_fwd"]["registers"] == loaded.kernels["gemm_bias_act_fwd"].registers
    )
    (tmp_path / "gemm.cubin").unlink()
    assert load_manifest(tmp_path) is None  # an incomplete build is rebuilt, not half-loaded


def test_a_bad_arch_fails_with_a_message(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kernels.build", "--out", str(tmp_path), "--arch", "sm_999"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert done.stderr.strip()

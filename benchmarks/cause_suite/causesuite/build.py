"""nvcc: causesuite/cuda/causes.cu -> BUILD_DIR/causes.cubin, ptxas's report in the log.

python -m causesuite.build --out BUILD_DIR [--arch sm_90]

The same steps as histsuite.build: each suite becomes a git repository of its own, which
cannot import another's code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "cuda" / "causes.cu"
CUBIN = "causes.cubin"


def nvcc() -> str:
    found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(found).exists():
        raise SystemExit("nvcc is not on PATH nor in /usr/local/cuda/bin")
    return found


def device_arch() -> str:
    """The arch of GPU 0 (CuPy), else sm_90 (the H100 the benchmark is written for)."""
    try:
        import cupy

        return "sm_" + cupy.cuda.Device(0).compute_capability
    except Exception:  # no CuPy or no GPU: a build that nothing here will run
        return "sm_90"


def build(out: Path, arch: str | None = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / CUBIN
    cmd = [nvcc(), "-cubin", f"-arch={arch or device_arch()}", "-O3", "-Xptxas", "-v"]
    cmd += ["-o", str(target), str(SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"nvcc failed ({done.returncode})")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("KERNELWATCH_BUILD_DIR", "build"))
    parser.add_argument("--arch")
    args = parser.parse_args(argv)
    print(f"wrote {build(Path(args.out), args.arch)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

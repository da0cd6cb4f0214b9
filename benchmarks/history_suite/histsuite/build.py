"""nvcc: histsuite/cuda/{stream,wander}.cu -> BUILD_DIR/{stream,wander}.cubin, ptxas's report in
the log.

python -m histsuite.build --out BUILD_DIR [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

CUDA = Path(__file__).resolve().parent / "cuda"
CUBIN = "stream.cubin"
SOURCES = {CUBIN: CUDA / "stream.cu", "wander.cubin": CUDA / "wander.cu"}


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


def build(out: Path, arch: str | None = None, cuda: Path = CUDA) -> list[Path]:
    """Each source of `cuda` (a copy of histsuite/cuda, the default this one) to its cubin."""
    out.mkdir(parents=True, exist_ok=True)
    arch = arch or device_arch()
    written = []
    for name, source in ((name, cuda / source.name) for name, source in SOURCES.items()):
        cmd = [nvcc(), "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v"]
        cmd += ["-o", str(out / name), str(source)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout + done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"nvcc failed on {source.name} ({done.returncode})")
        written.append(out / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("KERNELWATCH_BUILD_DIR", "build"))
    parser.add_argument("--arch")
    args = parser.parse_args(argv)
    for path in build(Path(args.out), args.arch):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

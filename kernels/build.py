"""Build the suite's CUDA sources: nvcc to cubin (with ptxas statistics), NVRTC as the fallback.

``build(build_dir, arch=None)`` compiles every ``kernels/cuda/*.cu`` with
``nvcc -cubin -arch=sm_XX -O3 -Xptxas -v`` (sources in parallel) and returns a ``BuildResult``:
the cubin of each source and, per kernel, the registers, shared memory, stack, spill stores and
loads that ptxas reported, and the compile time of its source. With a cache folder (``--cache``,
or $KERNELWATCH_BUILD_CACHE, which the runner sets to a folder it keeps between commits), a
source whose text, headers, compiler and flags were compiled before is copied from there: a
commit that changes one kernel file compiles that file only. The arch comes from the GPU when
none is given. Nothing here needs CuPy except ``device_arch`` (without an ``arch``) and
``build_nvrtc``, which compiles the same sources through CuPy's NVRTC when nvcc is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernels.ptxas import parse_ptxas

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
CACHE_ENV = "KERNELWATCH_BUILD_CACHE"  # the runner's folder for what builds keep
CACHE_ENTRIES = 500  # compiled sources kept there, the least recently used dropped first
NVCC_FLAGS = ("-cubin", "-O3", "-std=c++17", "-Xptxas", "-v")
_KERNEL_DECL = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)'
)
_INCLUDE = re.compile(r'^#include "([^"]+)"\s*$', re.MULTILINE)


class BuildError(RuntimeError):
    """A source failed to compile; ``log`` holds the compiler's output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclass
class KernelBuild:
    """One kernel's resources. ``None`` where the compiler does not report it (NVRTC)."""

    kernel: str
    source: str
    registers: int | None
    shared_bytes: int | None
    stack_bytes: int | None
    spill_store_bytes: int | None
    spill_load_bytes: int | None
    compile_s: float
    ptxas_ms: float | None = None


@dataclass
class BuildResult:
    arch: str
    compiler: str  # "nvcc" or "nvrtc"
    compiler_version: str
    build_dir: str | None
    cubins: dict[str, str] = field(default_factory=dict)  # source file name -> cubin path
    kernels: dict[str, KernelBuild] = field(default_factory=dict)
    log: str = ""
    modules: dict = field(default_factory=dict, repr=False)  # NVRTC only: name -> RawModule

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("modules")
        return d


def sources() -> list[Path]:
    """The suite's CUDA sources, sorted."""
    return sorted(CUDA_DIR.glob("*.cu"))


def kernel_names(source: Path) -> list[str]:
    """The ``extern "C" __global__`` kernels declared in a source file."""
    return _KERNEL_DECL.findall(source.read_text())


def normalize_arch(arch: str | int) -> str:
    """'90', 90, '9.0', 'sm_90' or 'compute_90' -> 'sm_90' ('sm_90a' is kept)."""
    s = str(arch).strip().lower().replace(".", "")
    s = s.removeprefix("sm_").removeprefix("compute_")
    if not re.fullmatch(r"\d{2,3}[af]?", s):
        raise ValueError(f"not a CUDA architecture: {arch!r}")
    return f"sm_{s}"


def device_arch(device: int = 0) -> str:
    """The compute capability of a GPU as 'sm_XX': nvidia-smi's where every GPU of the host
    has the same one (~0.1 s; which one CUDA calls `device` needs no asking then), else
    CuPy's (~0.8 s: CUDA's initialisation, beside the runner's workers starting up)."""
    same = smi_arch()
    if same is not None:
        return same
    import cupy

    return normalize_arch(cupy.cuda.Device(device).compute_capability)


def smi_arch(smi: str = "nvidia-smi") -> str | None:
    """The one compute capability of every GPU nvidia-smi lists, or None (none listed, several
    kinds, no nvidia-smi, an answer not understood)."""
    try:
        done = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    caps = {line.strip() for line in done.stdout.splitlines() if line.strip()}
    if done.returncode != 0 or len(caps) != 1:
        return None
    try:
        return normalize_arch(caps.pop())
    except ValueError:
        return None


def find_nvcc() -> str | None:
    """nvcc from $NVCC, the PATH, $CUDA_HOME or /usr/local/cuda, else None."""
    candidates = [os.environ.get("NVCC"), shutil.which("nvcc")]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(str(Path(os.environ[var]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"release ([\d.]+), (V[\w.]+)", out)
    return m.group(2) if m else out.strip().splitlines()[-1] if out.strip() else "unknown"


def nvcc_command(
    nvcc: str, source: Path, out: Path, arch: str, defines: tuple[str, ...] = ()
) -> list[str]:
    return [
        nvcc,
        *NVCC_FLAGS,
        f"-arch={normalize_arch(arch)}",
        f"-I{CUDA_DIR}",
        *(f"-D{d}" for d in defines),
        "-o",
        str(out),
        str(source),
    ]


def cache_key(src: Path, version: str, arch: str, defines: tuple[str, ...]) -> str:
    """What a cubin is made of: the source with the suite's headers inlined, the compiler's
    version, the flags, the arch and the defines."""
    parts = [inline_includes(src), version, " ".join(NVCC_FLAGS), normalize_arch(arch), *defines]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _compile_one(
    nvcc: str,
    src: Path,
    build_dir: Path,
    arch: str,
    defines: tuple[str, ...],
    cache: Path | None = None,
    version: str = "",
):
    out = build_dir / (src.stem + ".cubin")
    cmd = nvcc_command(nvcc, src, out, arch, defines)
    kept = cache / cache_key(src, version, arch, defines) if cache is not None else None
    if kept is not None and (kept / "meta.json").is_file():
        # The same source, headers, compiler and flags as a build this host made before: its
        # cubin and ptxas report, and the seconds that compile took.
        meta = json.loads((kept / "meta.json").read_text())
        shutil.copyfile(kept / "out.cubin", out)
        os.utime(kept)  # recently used: pruned last
        stderr = (kept / "ptxas.txt").read_text()
        log = f"$ {' '.join(cmd)}  # cached: the same inputs as an earlier build\n{stderr}"
        return src, out, float(meta["seconds"]), stderr, log
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    log = f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
    if proc.returncode != 0:
        raise BuildError(f"nvcc failed on {src.name} (exit {proc.returncode})", log)
    if kept is not None:
        _keep(kept, out, proc.stderr, seconds)
    return src, out, seconds, proc.stderr, log


def prune(cache: Path, keep: int = CACHE_ENTRIES) -> int:
    """Remove the least recently used of the cache's compiled sources beyond `keep`."""
    entries = sorted((p for p in cache.glob("*") if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime)  # fmt: skip
    gone = entries[: max(0, len(entries) - keep)]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return len(gone)


def _keep(kept: Path, cubin: Path, stderr: str, seconds: float) -> None:
    """Store a compile's outputs under `kept`, whole or not at all (several builds at once)."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{kept.name}-", dir=kept.parent))
    shutil.copyfile(cubin, tmp / "out.cubin")
    (tmp / "ptxas.txt").write_text(stderr)
    (tmp / "meta.json").write_text(json.dumps({"seconds": round(seconds, 4)}))
    try:
        tmp.rename(kept)
    except OSError:  # another build kept the same one first
        shutil.rmtree(tmp, ignore_errors=True)


def build(
    build_dir: str | Path,
    arch: str | None = None,
    *,
    nvcc: str | None = None,
    defines: tuple[str, ...] = (),
    only: tuple[str, ...] | None = None,
    cache: Path | None = None,
) -> BuildResult:
    """Compile every source (or the files named in ``only``) to ``build_dir/<stem>.cubin``;
    with ``cache`` (a folder kept between builds), a source compiled before with the same
    headers, compiler and flags is taken from there instead of compiled again."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise BuildError("nvcc not found (set $NVCC or $CUDA_HOME, or use build_nvrtc)")
    arch = normalize_arch(arch) if arch is not None else device_arch()
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    srcs = [s for s in sources() if only is None or s.name in only]
    result = BuildResult(arch, "nvcc", nvcc_version(nvcc), str(build_dir))
    version = result.compiler_version
    with ThreadPoolExecutor(max_workers=min(8, len(srcs) or 1)) as pool:
        jobs = [pool.submit(_compile_one, nvcc, s, build_dir, arch, defines, cache, version)
                for s in srcs]  # fmt: skip
        done = [j.result() for j in jobs]
    if cache is not None:
        prune(cache)
    for src, out, seconds, stderr, log in done:
        result.cubins[src.name] = str(out)
        result.log += log
        stats = parse_ptxas(stderr)
        for name in kernel_names(src):
            st = stats.get(name)
            if st is None:
                raise BuildError(f"ptxas reported nothing for kernel {name} of {src.name}", log)
            result.kernels[name] = KernelBuild(
                name,
                src.name,
                st.registers,
                st.shared_bytes,
                st.stack_bytes,
                st.spill_store_bytes,
                st.spill_load_bytes,
                round(seconds, 4),
                st.ptxas_ms,
            )
    return result


def inline_includes(source: Path) -> str:
    """The source text with the suite's own ``#include "x.cuh"`` lines replaced by the header."""

    def repl(m: re.Match) -> str:
        return inline_includes(CUDA_DIR / m.group(1))

    return _INCLUDE.sub(repl, source.read_text().replace("#pragma once", ""))


def build_nvrtc(defines: tuple[str, ...] = ()) -> BuildResult:
    """Compile every source with NVRTC through CuPy for the current GPU (no nvcc needed)."""
    import cupy

    arch = device_arch()
    result = BuildResult(arch, "nvrtc", ".".join(map(str, cupy.cuda.nvrtc.getVersion())), None)
    options = ("-std=c++17", *(f"-D{d}" for d in defines))
    for src in sources():
        t0 = time.perf_counter()
        module = cupy.RawModule(code=inline_includes(src), options=options, backend="nvrtc")
        fns = {name: module.get_function(name) for name in kernel_names(src)}
        seconds = time.perf_counter() - t0  # the first get_function compiles the module
        result.modules[src.name] = module
        for name, fn in fns.items():
            result.kernels[name] = KernelBuild(
                name,
                src.name,
                registers=getattr(fn, "num_regs", None),
                shared_bytes=getattr(fn, "shared_size_bytes", None),
                stack_bytes=getattr(fn, "local_size_bytes", None),
                spill_store_bytes=None,
                spill_load_bytes=None,
                compile_s=round(seconds, 4),
            )
    return result


MANIFEST = "build.json"


def write_manifest(result: BuildResult) -> Path:
    """``build.json`` beside the cubins: what the runner reports and the workers load."""
    assert result.build_dir is not None
    kernels = [
        {
            "kernel": k.kernel,
            "source": k.source,
            "arch": result.arch,
            "registers": k.registers,
            "shared_bytes": k.shared_bytes,
            "spill_stores_bytes": k.spill_store_bytes,
            "spill_loads_bytes": k.spill_load_bytes,
            "stack_bytes": k.stack_bytes,
            "compile_seconds": k.compile_s,
        }
        for k in result.kernels.values()
    ]
    path = Path(result.build_dir) / MANIFEST
    path.write_text(
        json.dumps(
            {
                "arch": result.arch,
                "compiler": result.compiler,
                "compiler_version": result.compiler_version,
                "cubins": result.cubins,
                "kernels": kernels,
            },
            indent=2,
        )
    )
    return path


def load_manifest(build_dir: str | Path) -> BuildResult | None:
    """The build a previous ``python -m kernels.build --out DIR`` left in DIR, if complete."""
    path = Path(build_dir) / MANIFEST
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if not all(Path(cubin).is_file() for cubin in data["cubins"].values()):
        return None
    result = BuildResult(
        data["arch"],
        data["compiler"],
        data["compiler_version"],
        str(build_dir),
        cubins=data["cubins"],
    )
    for k in data["kernels"]:
        result.kernels[k["kernel"]] = KernelBuild(
            k["kernel"],
            k["source"],
            k["registers"],
            k["shared_bytes"],
            k["stack_bytes"],
            k["spill_stores_bytes"],
            k["spill_loads_bytes"],
            k["compile_seconds"],
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.build", description=__doc__)
    parser.add_argument("--out", required=True, type=Path, help="where the cubins go")
    parser.add_argument("--arch", help="e.g. sm_90 (default: the GPU's)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=os.environ.get(CACHE_ENV) or None,
        help=f"cubins kept between builds (default: ${CACHE_ENV}, else none)",
    )
    args = parser.parse_args(argv)
    try:
        result = build(args.out, args.arch, cache=args.cache)
    except BuildError as exc:
        print(exc.log, file=sys.stderr)
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(result.log)  # ptxas -v of every kernel: the runner keeps it as the build log
    print(f"wrote {write_manifest(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

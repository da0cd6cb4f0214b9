#!/usr/bin/env bash
# One device session on the H100 for issues 5 and 7: the GPU end-to-end test, the runner's cost
# and stability, and the recording of the `kernelwatch demo` history. Every step writes its log
# under $OUT (what the device tool brings back); steps are named on the command line:
#
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
#     && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1; bash benchmarks/h100_session.sh \
#     env e2e demo cost
#
#   env   GPU, driver, tools and Python packages seen (env.log)
#   e2e   pytest -m gpu tests/test_end_to_end_gpu.py (e2e.log)
#   cost  python3 -m benchmarks.runner_cost --runs 2 (cost.log, cost_docs.tar.gz: its documents)
#   demo  ~10 commits of a copy of the default suite, each run with `kernelwatch-runner run`, a
#         confirmation of the regressed commit, packed as demo_history.tar.gz (demo.log)
#
# .whl holds the service's dependencies (FastAPI, SQLAlchemy, pydantic, ...) and cupti-python as
# cp312 wheels; the GPU host has Python 3.12, NumPy, CuPy, httpx, rich and the CUDA tools. The
# device allows 600 s per call: the steps share SESSION_SECONDS (default 570) from the start; the
# e2e step takes at most E2E_SECONDS (default 300), cost and demo what is left (demo stops after
# the fix commit when time runs short).
set -u -o pipefail
SESSION_START=$(date +%s)
left() { echo $(( ${SESSION_SECONDS:-570} - ($(date +%s) - SESSION_START) )); }
OUT=${OUT:-/tmp/kw-session-out}
mkdir -p "$OUT"
ROOT=$(pwd)
PY=${PYTHON:-python3}
ONLY_DEMO='^gemm_fwd\[act=gelu,k=1024,m=1024,n=1024\]|^train_step\[batch=256,|^transpose\[cols=4096,rows=4096\]|^dropout\[n=33554432,'

stamp() { echo "=== $(date -u +%H:%M:%S) $* ($(left) s left)"; }

env_step() {
  {
    stamp env
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,persistence_mode --format=csv
    "$PY" --version
    command -v nvcc ncu nsys || true
    nvcc --version | tail -2
    "$PY" - <<'EOF'
import importlib
for name in ("numpy", "cupy", "httpx", "rich", "scipy", "fastapi", "starlette", "pydantic",
             "sqlalchemy", "alembic", "uvicorn", "ruptures", "plotly", "cupti", "pytest"):
    try:
        mod = importlib.import_module(name)
        print(f"{name} {getattr(mod, '__version__', '?')} {getattr(mod, '__file__', '')}")
    except Exception as exc:
        print(f"{name} MISSING {type(exc).__name__}: {exc}")
EOF
  } 2>&1 | tee "$OUT/env.log"
}

e2e_step() {
  stamp e2e | tee "$OUT/e2e.log"
  timeout "${E2E_SECONDS:-300}" "$PY" -m pytest -m gpu tests/test_end_to_end_gpu.py -rA -q \
    -p no:cacheprovider 2>&1 | tee -a "$OUT/e2e.log" | tail -60
  echo "e2e exit $?" | tee -a "$OUT/e2e.log"
}

cost_step() {
  stamp cost | tee "$OUT/cost.log"
  local docs
  docs=$(mktemp -d /tmp/kw-cost-docs.XXXXXX)
  timeout "$(( $(left) - 10 ))" "$PY" -m benchmarks.runner_cost --runs 2 --out "$docs" \
    --runner-name h100-device 2>&1 | tee -a "$OUT/cost.log"
  echo "cost exit $?" | tee -a "$OUT/cost.log"
  tar czf "$OUT/cost_docs.tar.gz" -C "$docs" . 2>/dev/null || true
}

demo_step() {
  stamp demo | tee "$OUT/demo.log"
  local work
  work=$(mktemp -d /tmp/kw-demo.XXXXXX)
  cat >"$work/record_demo.py" <<'EOF'
"""Record the `kernelwatch demo` history: real commits of the default suite, run one by one."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(os.environ["KW_ROOT"])
WORK = Path(os.environ["KW_WORK"])
ONLY = os.environ["KW_ONLY"]
DRY = os.environ.get("DEMO_DRY") == "1"  # no GPU: fake documents, to test the commit chain
DEADLINE = time.monotonic() + float(os.environ.get("DEMO_SECONDS", "420"))
REPO_NAME = "kernelwatch/demo-kernels"
REPO = WORK / "demo-kernels"
BUNDLE = WORK / "demo_history"
# Fictional people (issue 19): the bundle recorded before this change still names real ones.
ADA = "Mira Okafor <mira@example.com>"
GRACE = "Tomas Lindqvist <tomas@example.com>"
LINUS = "Priya Raman <priya@example.com>"
# The tree copied to a GPU host need not be its git HEAD (uncommitted changes travel, and the
# copy's .git may be older): the kernels' own content hash says what was recorded.
SOURCE = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                        text=True).stdout.strip() or "unknown"
_KERNELS = sorted(p for p in (ROOT / "kernels").rglob("*") if p.is_file()
                  and "__pycache__" not in p.parts and p.suffix != ".cubin")
SOURCE += " with kernels/ of sha256 " + __import__("hashlib").sha256(
    b"".join(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes() for p in _KERNELS)
).hexdigest()[:12]
UNPADDED = "__shared__ float tile[TILE][TILE];"
PADDED = "__shared__ float tile[TILE][TILE + 1];"


def git(*args: str, author: str = ADA) -> str:
    name, _, email = author.partition(" <")
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name,
           "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_COMMITTER_EMAIL": email.rstrip(">")}
    done = subprocess.run(["git", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def edit(rel: str, old: str, new: str) -> None:
    path = REPO / rel
    text = path.read_text()
    assert old in text, f"{rel}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))


def append(rel: str, text: str) -> None:
    path = REPO / rel
    path.write_text(path.read_text().rstrip("\n") + "\n" + text)


def initial() -> None:
    REPO.mkdir(parents=True)
    shutil.copy2(ROOT / "kernelwatch.toml", REPO / "kernelwatch.toml")
    shutil.copytree(ROOT / "kernels", REPO / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__", "*.cubin"))
    (REPO / "README.md").write_text(
        "# demo-kernels\n\nkernelwatch's default kernel suite (`kernels/`, declared in\n"
        "`kernelwatch.toml`), the repository behind `kernelwatch demo`.\n")
    git("init", "-q", "-b", "main")


def regress() -> None:
    edit("kernels/cuda/transpose.cu", PADDED, UNPADDED)
    edit("kernels/cuda/transpose.cu",
         "through a 32x32 shared-memory tile (padded to 33 columns\n"
         "// so that the column reads do not conflict)",
         "through a 32x32 shared-memory tile (the padding column is\n"
         "// gone: 4 KiB of shared memory per block instead of 4.2)")


def fix() -> None:
    edit("kernels/cuda/transpose.cu", UNPADDED, PADDED)
    edit("kernels/cuda/transpose.cu",
         "through a 32x32 shared-memory tile (the padding column is\n"
         "// gone: 4 KiB of shared memory per block instead of 4.2)",
         "through a 32x32 shared-memory tile (padded to 33 columns\n"
         "// so that the column reads do not conflict: without the padding every column read is\n"
         "// a 32-way bank conflict)")


SCALED = "dropout4(v, (unsigned long long)e, thr, scale, seed)"
UNSCALED = "dropout4(v, (unsigned long long)e, thr, 1.0f, seed)"
COALESCED = "    const size_t idx = g * 4;\n"
STRIDED = ("    // One column strip after another: thread g takes row g % M of strip g / M.\n"
           "    const size_t idx = ((g % (size_t)M) * ((size_t)N / 4) + g / (size_t)M) * 4;\n")

# (subject and body, author, the change, kind of change, the manifest's note)
STEPS = [
    ("kernels: import the default suite\n\nkernelwatch's kernels/ and kernelwatch.toml as they "
     "are.", ADA, initial, "the suite as imported: the first measurement of every series"),
    ("adamw: explain the block-to-tensor map\n\nComment only.", ADA,
     lambda: edit("kernels/cuda/adamw.cu", "#define ADAMW_THREADS 256",
                  "// A block finds its tensor by a linear scan of block_start: a few tensors\n"
                  "// per launch, so a scan beats a binary search.\n#define ADAMW_THREADS 256"),
     "an ordinary change: a comment in adamw.cu"),
    ("loss: note the ticket counter's reset\n\nComment only.", LINUS,
     lambda: edit("kernels/cuda/loss.cu", "#define LOSS_THREADS 256",
                  "// The counter is reset by the last block, so launches need no memset.\n"
                  "#define LOSS_THREADS 256"),
     "an ordinary change: a comment in loss.cu"),
    ("transpose: drop the padding column of the shared tile\n\nThe tile was 32x33 floats; "
     "32x32 is simpler and uses less shared memory.", GRACE, regress,
     "THE REGRESSION: transpose_tiled's shared tile loses its padding column (32x33 -> 32x32 "
     "floats), so every column read of the tile is a 32-way shared-memory bank conflict; "
     "transpose[cols=4096,rows=4096] gets slower, the other workloads do not"),
    ("gemm: comment the split-K epilogue\n\nComment only.", ADA,
     lambda: edit("kernels/cuda/gemm.cu", "// FP32 GEMMs of the suite:",
                  "// (split-K: the epilogue kernel sums the partial tiles in a fixed order,\n"
                  "// so results do not depend on the order the blocks finish in.)\n"
                  "// FP32 GEMMs of the suite:"),
     "an ordinary change while the regression is live: a comment in gemm.cu"),
    ("transpose: name the pass height\n\nComment only.", LINUS,
     lambda: edit("kernels/cuda/transpose.cu", "#define ROWS_PER_PASS 8",
                  "// Each thread moves TILE / ROWS_PER_PASS elements of the tile.\n"
                  "#define ROWS_PER_PASS 8"),
     "an ordinary change while the regression is live: a comment in transpose.cu"),
    ("transpose: pad the shared tile again\n\nWithout the padding column every column read of "
     "the tile hits one bank: a 32-way conflict. Restores 32x33.", ADA, fix,
     "THE FIX: the padding column is back (32x33 floats); transpose[cols=4096,rows=4096] is "
     "as fast as before the regression"),
    ("dropout: take the scale out of the vector loop\n\nThe 1/(1-p) scale moves to the "
     "caller.", GRACE, lambda: edit("kernels/cuda/dropout.cu", SCALED, UNSCALED),
     "A CORRECTNESS FAILURE: dropout keeps the kept elements unscaled (x instead of x/(1-p)); "
     "its output is 10% off the float64 reference, so the workload fails correctness (broken)"),
    ("dropout: scale the kept elements again\n\nThe caller never applied it.", GRACE,
     lambda: edit("kernels/cuda/dropout.cu", UNSCALED, SCALED),
     "the correctness failure fixed: dropout passes again"),
    ("README: how to run the suite\n\nDocumentation only.", LINUS,
     lambda: append("README.md", "\nRun it with `kernelwatch-runner run --repo . --commit "
                    "HEAD`.\n"),
     "pushed with the two commits after it: documentation only"),
    ("gemm: walk the split-K epilogue by column strips\n\nEach thread sums one element per "
     "row of a strip.", LINUS, lambda: edit("kernels/cuda/gemm.cu", COALESCED, STRIDED),
     "THE SECOND REGRESSION, left open: the split-K epilogue's threads walk down columns "
     "(thread g takes row g % M), so neighbouring threads read addresses N floats apart and no "
     "load coalesces; gemm_fwd 1024^3 (split-K) and the training step get slower. Pushed in the "
     "middle of three commits: found at the push's head, bisected to this commit"),
    ("NOTES: the transpose bank conflicts\n\nDocumentation only.", LINUS,
     lambda: append("kernels/NOTES.md", "\n## Transpose\nThe 32x32 tile needs its padding "
                    "column: without it every column read is a 32-way bank conflict.\n"),
     "THE PUSH'S HEAD: documentation only, the last of three commits pushed at once; measured "
     "here, the second regression shows, and its bisection names the commit before"),
    ("dropout: say why the tail is scalar\n\nComment only.", GRACE,
     lambda: edit("kernels/cuda/dropout.cu", "#include \"philox.cuh\"",
                  "// (n need not be a multiple of 4: the last group is scalar, never a float4\n"
                  "// that would read past the end.)\n#include \"philox.cuh\""),
     "an ordinary change while the second regression is live: a comment in dropout.cu"),
    ("loss: say why the sum is in double\n\nComment only.", ADA,
     lambda: edit("kernels/cuda/loss.cu", "#define LOSS_THREADS 256",
                  "// (partial sums in double: the order blocks finish in does not move the "
                  "result)\n#define LOSS_THREADS 256"),
     "an ordinary change while the second regression is live: a comment in loss.cu"),
]
REGRESSION, FIX, BROKEN, REGRESSION_OPEN = 3, 6, 7, 10  # indexes into STEPS
# Steps 9-11 arrive as one push: only its head (11) is measured, as a push's job is; the
# regression found there is confirmed and then bisected over the pushed commits.
PUSHED, PUSH_HEAD = (9, 10), 11


def run(sha: str, out: Path, log) -> int:
    if DRY:
        doc = json.loads((ROOT / "docs" / "result-document.example.json").read_text())
        doc["commit"]["sha"] = sha
        out.write_text(json.dumps(doc, indent=2) + "\n")
        return 0
    cmd = [sys.executable, "-m", "runner.cli", "run", "--repo", str(REPO), "--commit", sha,
           "--out", str(out), "--only", ONLY, "--branch", "main",
           "--repository-name", REPO_NAME, "--cache", str(WORK / "cache")]
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    try:
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=180).returncode
    except subprocess.TimeoutExpired:
        return -1


def medians(doc: dict) -> dict:
    return {(w["name"], json.dumps(w["params"], sort_keys=True)): w["timing"]["median"]
            for w in doc["workloads"] if w.get("timing")}


def confirm(base: str, head: str, base_doc: dict, head_doc: dict, out: Path) -> list:
    before, after = medians(base_doc), medians(head_doc)
    wanted = [{"name": n, "params": json.loads(p)} for (n, p), m in after.items()
              if (n, p) in before and m > 1.01 * before[(n, p)]]  # what the verdicts flag
    if not wanted:  # the regression did not show: confirm the transpose all the same
        wanted = [{"name": w["name"], "params": w["params"]} for w in head_doc["workloads"]
                  if w["name"] == "transpose"]
    print(f"confirmation of {head[:12]} against {base[:12]}: {wanted}", flush=True)
    if DRY:
        doc = dict(head_doc, paired_base=base_doc)
    else:
        from runner.run.confirm import execute_confirmation
        from runner.run.pipeline import RunRequest

        request = RunRequest(source=str(REPO), rev=head, branch="main", repository=REPO_NAME,
                             cache_dir=WORK / "cache")
        doc = execute_confirmation(request, base, wanted)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return wanted


def ident(w: dict) -> str:
    return f"{w['name']}[{','.join(f'{k}={v}' for k, v in sorted(w['params'].items()))}]"


def how(gpu: str, shas: list, wanted: list) -> str:
    """The manifest's account; `shas`: every commit made so far, in STEPS order."""
    short = [s[:12] for s in shas]

    def at(index: int) -> str:
        return short[index] if len(short) > index else "(not recorded)"

    fix = short[FIX] if len(short) > FIX else "(not recorded)"
    return (
        f"Recorded on an {gpu} (driver, CUDA, clocks and the rest in each document's "
        f"environment) by benchmarks/h100_session.sh (step `demo`), {datetime.now(UTC):%Y-%m-%d}. "
        f"A temporary git repository `demo-kernels` (branch main) was made from a copy of "
        f"kernelwatch's kernelwatch.toml and kernels/ (as at kernelwatch commit {SOURCE}) plus a "
        f"README, and {len(shas)} commits "
        f"were applied one after another, each measured right after it was made (but the "
        f"two pushed before the push's head, below) with "
        f"`python3 -m runner.cli run --repo demo-kernels --commit SHA --out FILE --only "
        f"'{ONLY}' --branch main --repository-name {REPO_NAME}` (= kernelwatch-runner run: "
        f"checkout in a git worktree, nvcc build, correctness against float64 references, "
        f"timing in 3 processes with the L2 flushed, the training step's kernel timeline, one "
        f"ncu pass; the suite's own kernelwatch.toml settings). The workloads: the 1024^3 "
        f"forward GEMM with GELU (split-K), the small MLP training step (batch 256, "
        f"1024-4096-1024; with its kernel timeline), the 4096x4096 transpose and dropout over "
        f"2^25 floats (memory-bound). Commit {short[REGRESSION] if len(short) > REGRESSION else '?'}"
        f" is a real regression: transpose.cu's shared tile loses its padding column "
        f"(float tile[32][33] -> tile[32][32]), so every column read of the tile is a 32-way "
        f"shared-memory bank conflict and transpose_tiled gets slower; commit {fix} restores the "
        f"padding and fixes it. Commit {at(BROKEN)} drops dropout's 1/(1-p) scale (the workload "
        f"fails correctness) and the next commit restores it. Commit {at(REGRESSION_OPEN)} makes "
        f"the split-K GEMM epilogue's loads uncoalesced (its threads walk down columns): a second "
        f"regression, of gemm_fwd 1024^3 and the training step, left open; it was pushed with "
        f"the commit before and the one after it, measured at the push's head only, confirmed "
        f"there and bisected (each tested commit against the last good one, interleaved, "
        f"recorded as service.evaluation.bisect asks for them). The other commits "
        f"change comments and documentation only. For each regressed commit a confirmation was "
        f"also recorded offline with "
        f"runner.run.confirm.execute_confirmation (what a confirm job runs): its parent as base and "
        f"it as head built side by side and timed interleaved, A B A B over 3 processes, for "
        f"{', '.join(ident(w) for w in wanted)}; that document carries the base's as "
        f"`paired_base`. Every file is the result document exactly as the runner wrote it "
        f"(JSON, indent 2), gzip'd. The runner was run without a service, so the documents have "
        f"no job id, lease token or runner name."
    )


def bisect(good: str, candidates: list, wanted: list, runs: list) -> None:
    """Record what the service's bisection (service.evaluation.bisect) will ask for: the middle
    candidate against the last good commit, interleaved, until the first bad one is known."""
    while candidates:
        sha = candidates[(len(candidates) - 1) // 2]
        raw = WORK / f"{sha[:12]}-bisect.json"
        started = time.monotonic()
        if DRY:
            doc = json.loads((ROOT / "docs" / "result-document.example.json").read_text())
            doc["commit"]["sha"], doc["paired_base"] = sha, dict(doc)
        else:
            from runner.run.confirm import execute_confirmation
            from runner.run.pipeline import RunRequest

            request = RunRequest(source=str(REPO), rev=sha, branch="main",
                                 repository=REPO_NAME, cache_dir=WORK / "cache")
            doc = execute_confirmation(request, good, wanted)
        raw.write_text(json.dumps(doc, indent=2) + "\n")
        name = f"{len(runs) + 1:02d}-{sha[:12]}-bisect.json.gz"
        (BUNDLE / name).write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
        before, after = medians(doc.get("paired_base") or {"workloads": []}), medians(doc)
        bad = any(k in before and after[k] > 1.01 * before[k] for k in after)
        runs.append({"file": name, "kind": "bisect", "commit": sha,
                     "note": f"bisection: {sha[:12]} against the last good {good[:12]}, "
                             f"interleaved: {'bad' if bad else 'good'}"})
        print(f"bisect {sha[:12]} against {good[:12]}: {'bad' if bad else 'good'} "
              f"{time.monotonic() - started:.1f} s", flush=True)
        i = candidates.index(sha)
        if bad:
            candidates = candidates[:i]
        else:
            good, candidates = sha, candidates[i + 1 :]


def main() -> int:
    BUNDLE.mkdir(parents=True)
    log = open(os.environ.get("KW_RUNLOG", WORK / "runs.log"), "a")  # noqa: SIM115
    runs, shas, docs, wanted, pushed, made = [], [], [], [], [], []
    gpu = "unknown GPU"
    for i, (message, author, change, note) in enumerate(STEPS):
        if i > PUSH_HEAD and time.monotonic() > DEADLINE - 45:
            print(f"deadline: stopping before commit {i + 1}", flush=True)
            break
        change()
        git("add", "-A", author=author)
        git("commit", "-q", "-m", message, author=author)
        sha = git("rev-parse", "HEAD")
        made.append(sha)
        if i in PUSHED:
            pushed.append(sha)
            print(f"commit {i + 1} {sha[:12]}: pushed, not measured on its own", flush=True)
            continue
        started = time.monotonic()
        raw = WORK / f"{sha[:12]}.json"
        code = run(sha, raw, log)
        if not raw.is_file():
            print(f"commit {i + 1} {sha[:12]}: no document (exit {code}); stopping", flush=True)
            break
        doc = json.loads(raw.read_text())
        gpu = doc["environment"]["gpu"]["name"]
        name = f"{len(runs) + 1:02d}-{sha[:12]}.json.gz"
        (BUNDLE / name).write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
        entry = {"file": name, "kind": "run", "commit": sha, "note": note}
        push = [*pushed, sha] if pushed else []
        if push:  # the push's commits, oldest first (a push job's payload.push_commits)
            entry["push_commits"], pushed = push, []
        runs.append(entry)
        shas.append(sha)
        docs.append(doc)
        print(f"commit {i + 1} {sha[:12]} exit {code} status {doc['status']} "
              f"{time.monotonic() - started:.1f} s: "
              f"{ {k[0]: round(v, 2) for k, v in medians(doc).items()} }", flush=True)
        if i in (REGRESSION, PUSH_HEAD):
            started = time.monotonic()
            raw = WORK / f"{sha[:12]}-confirm.json"
            confirmed = confirm(shas[-2], sha, docs[-2], doc, raw)
            wanted = wanted or confirmed
            name = f"{len(runs) + 1:02d}-{sha[:12]}-confirm.json.gz"
            (BUNDLE / name).write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
            runs.append({"file": name, "kind": "confirm", "commit": sha,
                         "note": f"confirmation of the regression at {sha[:12]}: base "
                                 f"{shas[-2][:12]} (its parent, in paired_base) and head timed "
                                 f"interleaved, A B A B"})
            print(f"confirmation {time.monotonic() - started:.1f} s", flush=True)
            if push:
                bisect(shas[-2], push[:-1], confirmed, runs)
        manifest = {"recorded": {"gpu": gpu, "date": f"{datetime.now(UTC):%Y-%m-%d}",
                                 "how": how(gpu, made, wanted)},
                    "runs": runs}
        (BUNDLE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(subprocess.run(["git", "log", "--oneline", "--first-parent"], cwd=REPO,
                         capture_output=True, text=True).stdout, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
EOF
  local budget=$(( $(left) - 20 ))
  KW_ROOT=$ROOT KW_WORK=$work KW_ONLY=$ONLY_DEMO KW_RUNLOG=$OUT/demo_runs.log \
    DEMO_SECONDS=$(( budget - 40 )) timeout "$budget" "$PY" "$work/record_demo.py" 2>&1 \
    | tee -a "$OUT/demo.log"
  echo "demo exit $?" | tee -a "$OUT/demo.log"
  tar czf "$OUT/demo_history.tar.gz" -C "$work" demo_history 2>&1 | tee -a "$OUT/demo.log"
  ls -la "$work/demo_history" | tee -a "$OUT/demo.log"
}

for step in "$@"; do
  case "$step" in
    env | e2e | cost | demo) "${step}_step" ;;
    *) echo "unknown step $step (env, e2e, cost, demo)" >&2; exit 2 ;;
  esac
done
stamp done

"""Record the history `kernelwatch demo` serves (dashboards/demo_history/) on a GPU host.

    # on the GPU host (CuPy, cupti-python, nvcc, ncu; the service's wheels on PYTHONPATH):
    python -m benchmarks.demo_record --out DIR [--budget 540]

A temporary git repository is made from a copy of the default suite (kernels/ and
kernelwatch.toml) and fourteen commits are applied one after another, each run with
`kernelwatch-runner run` right after it is made (four workloads: the split-K GEMM, the training
step, the transpose and dropout). Two commits are real regressions (the transpose's shared tile
loses its padding column; the split-K epilogue's loads stop coalescing), one is a fix, one
breaks dropout's correctness and the next mends it; the rest change comments. The last three
commits arrive as one push: only its head is measured, confirmed against the commit before the
push and bisected as service.evaluation.alerts.bisect asks. DIR/demo_history/ then holds the gzip'd
documents and a manifest; copy it over dashboards/demo_history/ (tests/dashboards/
test_demo_bundle.py says what the loader relies on).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPO_NAME = "kernelwatch/demo-kernels"
ONLY = (
    r"^gemm_fwd\[act=gelu,k=1024,m=1024,n=1024\]|^train_step\[batch=256,"
    r"|^transpose\[cols=4096,rows=4096\]|^dropout\[n=33554432,"
)
# Fictional people: the demo's commits need authors.
MIRA = "Mira Okafor <mira@example.com>"
TOMAS = "Tomas Lindqvist <tomas@example.com>"
PRIYA = "Priya Raman <priya@example.com>"
UNPADDED = "__shared__ float tile[TILE][TILE];"
PADDED = "__shared__ float tile[TILE][TILE + 1];"
SCALED = "dropout4(v, (unsigned long long)e, thr, scale, seed)"
UNSCALED = "dropout4(v, (unsigned long long)e, thr, 1.0f, seed)"
COALESCED = "    const size_t idx = g * 4;\n"
STRIDED = (
    "    // One column strip after another: thread g takes row g % M of strip g / M.\n"
    "    const size_t idx = ((g % (size_t)M) * ((size_t)N / 4) + g / (size_t)M) * 4;\n"
)
PAD_NOTE = (
    "through a 32x32 shared-memory tile (padded to 33 columns\n"
    "// so that the column reads do not conflict)"
)
NO_PAD_NOTE = (
    "through a 32x32 shared-memory tile (the padding column is\n"
    "// gone: 4 KiB of shared memory per block instead of 4.2)"
)


class Demo:
    """The demo repository under `work` and the commits made in it."""

    def __init__(self, work: Path) -> None:
        self.repo = work / "demo-kernels"

    def git(self, *args: str, author: str = MIRA) -> str:
        name, _, email = author.partition(" <")
        who = {"NAME": name, "EMAIL": email.rstrip(">")}
        env = {**os.environ, **{f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER")
                                for k, v in who.items()}}  # fmt: skip
        done = subprocess.run(["git", *args], cwd=self.repo, env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stdout.strip()

    def edit(self, rel: str, old: str, new: str) -> None:
        path = self.repo / rel
        text = path.read_text()
        if old not in text:
            raise SystemExit(f"{rel}: {old!r} not found (kernels/ changed: update the steps)")
        path.write_text(text.replace(old, new, 1))

    def append(self, rel: str, text: str) -> None:
        path = self.repo / rel
        path.write_text(path.read_text().rstrip("\n") + "\n" + text)

    def initial(self) -> None:
        self.repo.mkdir(parents=True)
        shutil.copy2(ROOT / "kernelwatch.toml", self.repo / "kernelwatch.toml")
        shutil.copytree(ROOT / "kernels", self.repo / "kernels",
                        ignore=shutil.ignore_patterns("__pycache__", "*.cubin"))  # fmt: skip
        (self.repo / "README.md").write_text(
            "# demo-kernels\n\nkernelwatch's default kernel suite (`kernels/`, declared in\n"
            "`kernelwatch.toml`), the repository behind `kernelwatch demo`.\n"
        )
        self.git("init", "-q", "-b", "main")

    def steps(self) -> list[tuple[str, str, Callable[[], None], str]]:
        """(message, author, the change, the manifest's note), in commit order."""
        e, a = self.edit, self.append
        tr, gemm = "kernels/cuda/transpose.cu", "kernels/cuda/gemm.cu"
        drop = "kernels/cuda/dropout.cu"

        def regress() -> None:
            e(tr, PADDED, UNPADDED)
            e(tr, PAD_NOTE, NO_PAD_NOTE)

        def fix() -> None:
            e(tr, UNPADDED, PADDED)
            e(tr, NO_PAD_NOTE, PAD_NOTE)

        return [
            ("kernels: import the default suite\n\nkernelwatch's kernels/ and kernelwatch.toml.",
             MIRA, self.initial, "the suite as imported: the first measurement of every series"),
            ("adamw: explain the block-to-tensor map\n\nComment only.", MIRA,
             lambda: e("kernels/cuda/adamw.cu", "#define ADAMW_THREADS 256",
                       "// A block finds its tensor by a linear scan of block_start: a few\n"
                       "// tensors per launch, so a scan beats a binary search.\n"
                       "#define ADAMW_THREADS 256"),
             "an ordinary change: a comment in adamw.cu"),
            ("loss: note the ticket counter's reset\n\nComment only.", PRIYA,
             lambda: e("kernels/cuda/loss.cu", "#define LOSS_THREADS 256",
                       "// The counter is reset by the last block, so launches need no memset.\n"
                       "#define LOSS_THREADS 256"),
             "an ordinary change: a comment in loss.cu"),
            ("transpose: drop the padding column of the shared tile\n\nThe tile was 32x33 "
             "floats; 32x32 is simpler and uses less shared memory.", TOMAS, regress,
             "THE REGRESSION: transpose_tiled's shared tile loses its padding column (32x33 -> "
             "32x32 floats), so every column read of the tile is a 32-way shared-memory bank "
             "conflict; transpose[cols=4096,rows=4096] gets slower, the other workloads do not"),
            ("gemm: comment the split-K epilogue\n\nComment only.", MIRA,
             lambda: e(gemm, "// FP32 GEMMs of the suite:",
                       "// (split-K: the epilogue kernel sums the partial tiles in a fixed "
                       "order,\n// so results do not depend on the order the blocks finish "
                       "in.)\n// FP32 GEMMs of the suite:"),
             "an ordinary change while the regression is live: a comment in gemm.cu"),
            ("transpose: name the pass height\n\nComment only.", PRIYA,
             lambda: e(tr, "#define ROWS_PER_PASS 8",
                       "// Each thread moves TILE / ROWS_PER_PASS elements of the tile.\n"
                       "#define ROWS_PER_PASS 8"),
             "an ordinary change while the regression is live: a comment in transpose.cu"),
            ("transpose: pad the shared tile again\n\nWithout the padding column every column "
             "read of the tile hits one bank: a 32-way conflict. Restores 32x33.", MIRA, fix,
             "THE FIX: the padding column is back (32x33 floats); "
             "transpose[cols=4096,rows=4096] is as fast as before the regression"),
            ("dropout: take the scale out of the vector loop\n\nThe 1/(1-p) scale moves to the "
             "caller.", TOMAS, lambda: e(drop, SCALED, UNSCALED),
             "A CORRECTNESS FAILURE: dropout keeps the kept elements unscaled (x instead of "
             "x/(1-p)); its output is 10% off the float64 reference, so the workload fails "
             "correctness (broken)"),
            ("dropout: scale the kept elements again\n\nThe caller never applied it.", TOMAS,
             lambda: e(drop, UNSCALED, SCALED),
             "the correctness failure fixed: dropout passes again"),
            ("README: how to run the suite\n\nDocumentation only.", PRIYA,
             lambda: a("README.md", "\nRun it with `kernelwatch-runner run --repo . --commit "
                       "HEAD`.\n"),
             "pushed with the two commits after it: documentation only"),
            ("gemm: walk the split-K epilogue by column strips\n\nEach thread sums one element "
             "per row of a strip.", PRIYA, lambda: e(gemm, COALESCED, STRIDED),
             "THE SECOND REGRESSION, left open: the split-K epilogue's threads walk down columns "
             "(thread g takes row g % M), so neighbouring threads read addresses N floats apart "
             "and no load coalesces; gemm_fwd 1024^3 (split-K) and the training step get slower. "
             "Pushed in the middle of three commits: found at the push's head, bisected to this "
             "commit"),
            ("NOTES: the transpose bank conflicts\n\nDocumentation only.", PRIYA,
             lambda: a("kernels/NOTES.md", "\n## Transpose\nThe 32x32 tile needs its padding "
                       "column: without it every column read is a 32-way bank conflict.\n"),
             "THE PUSH'S HEAD: documentation only, the last of three commits pushed at once; "
             "measured here, the second regression shows, and its bisection names the commit "
             "before"),
            ("dropout: say why the tail is scalar\n\nComment only.", TOMAS,
             lambda: e(drop, '#include "philox.cuh"',
                       "// (n need not be a multiple of 4: the last group is scalar, never a "
                       'float4\n// that would read past the end.)\n#include "philox.cuh"'),
             "an ordinary change while the second regression is live: a comment in dropout.cu"),
            ("loss: say why the sum is in double\n\nComment only.", MIRA,
             lambda: e("kernels/cuda/loss.cu", "#define LOSS_THREADS 256",
                       "// (partial sums in double: the order blocks finish in does not move "
                       "the result)\n#define LOSS_THREADS 256"),
             "an ordinary change while the second regression is live: a comment in loss.cu"),
        ]  # fmt: skip


REGRESSION, FIX, BROKEN, SECOND = 3, 6, 7, 10  # indexes into Demo.steps()
# Steps 9-11 arrive as one push: only its head (11) is measured, as a push's job is; the
# regression found there is confirmed and then bisected over the pushed commits.
PUSHED, PUSH_HEAD = (9, 10), 11


def source_id() -> str:
    """kernelwatch's commit and a hash of kernels/: the tree copied to a GPU host need not be its
    git HEAD, so the kernels' own content says what was recorded."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip() or "unknown"  # fmt: skip
    files = sorted(p for p in (ROOT / "kernels").rglob("*") if p.is_file()
                   and "__pycache__" not in p.parts and p.suffix != ".cubin")  # fmt: skip
    digest = hashlib.sha256(b"".join(p.relative_to(ROOT).as_posix().encode() + b"\0"
                                     + p.read_bytes() for p in files)).hexdigest()  # fmt: skip
    return f"{head} with kernels/ of sha256 {digest[:12]}"


def medians(doc: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(w["name"], json.dumps(w["params"], sort_keys=True)): w["timing"]["median"]
            for w in doc["workloads"] if w.get("timing")}  # fmt: skip


def ident(w: dict[str, Any]) -> str:
    return f"{w['name']}[{','.join(f'{k}={v}' for k, v in sorted(w['params'].items()))}]"


class Recorder:
    def __init__(self, work: Path, deadline: float) -> None:
        self.work, self.deadline = work, deadline
        self.demo = Demo(work)
        self.bundle = work / "demo_history"
        self.cache = work / "cache"
        self.log = (work / "runs.log").open("a")
        self.entries: list[dict[str, Any]] = []

    def keep(self, raw: Path, kind: str, sha: str, note: str, **extra: Any) -> None:
        suffix = "" if kind == "run" else f"-{kind}"
        name = f"{len(self.entries) + 1:02d}-{sha[:12]}{suffix}.json.gz"
        (self.bundle / name).write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
        self.entries.append({"file": name, "kind": kind, "commit": sha, "note": note, **extra})

    def run(self, sha: str) -> dict[str, Any] | None:
        out = self.work / f"{sha[:12]}.json"
        cmd = [sys.executable, "-m", "runner.cli", "run", "--repo", str(self.demo.repo),
               "--commit", sha, "--out", str(out), "--only", ONLY, "--branch", "main",
               "--repository-name", REPO_NAME, "--cache", str(self.cache)]  # fmt: skip
        self.log.write(f"$ {' '.join(cmd)}\n")
        self.log.flush()
        try:
            subprocess.run(cmd, stdout=self.log, stderr=subprocess.STDOUT, timeout=240, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return None
        return json.loads(out.read_text()) if out.is_file() else None

    def paired(self, base: str, head: str, wanted: list[dict[str, Any]], kind: str) -> Path:
        """Base and head built side by side and timed interleaved (what a confirm job runs)."""
        from runner.run.confirm import execute_confirmation
        from runner.run.pipeline import RunRequest

        request = RunRequest(source=str(self.demo.repo), rev=head, branch="main",
                             repository=REPO_NAME, cache_dir=self.cache)  # fmt: skip
        doc = execute_confirmation(request, base, wanted)
        raw = self.work / f"{head[:12]}-{kind}.json"
        raw.write_text(json.dumps(doc, indent=2) + "\n")
        return raw

    def confirm(self, base: str, head: str, base_doc: dict, head_doc: dict) -> list[dict]:
        before, after = medians(base_doc), medians(head_doc)
        wanted = [{"name": n, "params": json.loads(p)} for (n, p), m in after.items()
                  if (n, p) in before and m > 1.01 * before[(n, p)]]  # fmt: skip
        print(f"confirmation of {head[:12]} against {base[:12]}: "
              f"{[ident(w) for w in wanted]}", flush=True)  # fmt: skip
        if wanted:
            raw = self.paired(base, head, wanted, "confirm")
            self.keep(raw, "confirm", head, f"confirmation of the regression at {head[:12]}: "
                      f"base {base[:12]} (the last measured commit, in paired_base) and head "
                      f"timed interleaved, A B A B")  # fmt: skip
        return wanted

    def bisect(self, good: str, candidates: list[str], wanted: list[dict]) -> None:
        """What service.evaluation.alerts.bisect asks for: the middle candidate against the last
        good commit, interleaved, until the first bad one is known."""
        while candidates:
            sha = candidates[(len(candidates) - 1) // 2]
            started = time.monotonic()
            raw = self.paired(good, sha, wanted, "bisect")
            doc = json.loads(raw.read_text())
            before, after = medians(doc["paired_base"]), medians(doc)
            bad = any(k in before and after[k] > 1.01 * before[k] for k in after)
            verdict = "bad" if bad else "good"
            self.keep(raw, "bisect", sha, f"bisection: {sha[:12]} against the last good "
                      f"{good[:12]}, interleaved: {verdict}")  # fmt: skip
            print(f"bisect {sha[:12]} against {good[:12]}: {verdict} "
                  f"{time.monotonic() - started:.1f} s", flush=True)  # fmt: skip
            i = candidates.index(sha)
            if bad:
                candidates = candidates[:i]
            else:
                good, candidates = sha, candidates[i + 1 :]

    def how(self, gpu: str, made: list[str], wanted: list[dict]) -> str:
        short = [s[:12] for s in made]

        def at(i: int) -> str:
            return short[i] if len(short) > i else "(not recorded)"

        return (
            f"Recorded on an {gpu} (driver, CUDA, clocks and the rest in each document's "
            f"environment) by `python -m benchmarks.demo_record`, {datetime.now(UTC):%Y-%m-%d}. "
            f"A temporary git repository `demo-kernels` (branch main) was made from a copy of "
            f"kernelwatch's kernelwatch.toml and kernels/ (as at kernelwatch commit "
            f"{source_id()}) plus a README, and {len(made)} commits were applied one after "
            f"another, each measured right after it was made (but the two pushed before the "
            f"push's head) with `kernelwatch-runner run --repo demo-kernels --commit SHA --out "
            f"FILE --only '{ONLY}' --branch main --repository-name {REPO_NAME}` (checkout in a "
            f"git worktree, nvcc build, correctness against float64 references, timing in "
            f"several processes with the L2 flushed, the training step's kernel timeline, one "
            f"ncu pass; the suite's own kernelwatch.toml settings). The workloads: the 1024^3 "
            f"forward GEMM with GELU (split-K), the small MLP training step (batch 256, "
            f"1024-4096-1024; with its kernel timeline), the 4096x4096 transpose and dropout "
            f"over 2^25 floats (memory-bound). Commit {at(REGRESSION)} is a real regression: "
            f"transpose.cu's shared tile loses its padding column (float tile[32][33] -> "
            f"tile[32][32]), so every column read of the tile is a 32-way shared-memory bank "
            f"conflict and transpose_tiled gets slower; commit {at(FIX)} restores the padding "
            f"and fixes it. Commit {at(BROKEN)} drops dropout's 1/(1-p) scale (the workload "
            f"fails correctness) and the next commit restores it. Commit {at(SECOND)} makes the "
            f"split-K GEMM epilogue's loads uncoalesced (its threads walk down columns): a "
            f"second regression, of gemm_fwd 1024^3 and the training step, left open; it was "
            f"pushed with the commit before and the one after it, measured at the push's head "
            f"only, confirmed there and bisected (each tested commit against the last good one, "
            f"interleaved, as service.evaluation.alerts.bisect asks for them). The other commits "
            f"change comments and documentation only. Each regressed commit's confirmation was "
            f"recorded with runner.run.confirm.execute_confirmation (what a confirm job runs): "
            f"the last measured commit as base and it as head built side by side and timed "
            f"interleaved, A B A B, for {', '.join(ident(w) for w in wanted) or '(none)'}; that "
            f"document carries the base's as `paired_base`. Every file is the result document "
            f"exactly as the runner wrote it (JSON, indent 2), gzip'd. The runner ran without a "
            f"service, so the documents have no job id, lease token or runner name."
        )

    def record(self) -> int:
        self.bundle.mkdir(parents=True)
        made: list[str] = []
        shas: list[str] = []
        docs: list[dict[str, Any]] = []
        pushed: list[str] = []
        wanted: list[dict[str, Any]] = []
        gpu = "unknown GPU"
        for i, (message, author, change, note) in enumerate(self.demo.steps()):
            if i > PUSH_HEAD and time.monotonic() > self.deadline - 45:
                print(f"deadline: stopping before commit {i + 1}", flush=True)
                break
            change()
            self.demo.git("add", "-A", author=author)
            self.demo.git("commit", "-q", "-m", message, author=author)
            sha = self.demo.git("rev-parse", "HEAD")
            made.append(sha)
            if i in PUSHED:
                pushed.append(sha)
                print(f"commit {i + 1} {sha[:12]}: pushed, not measured on its own", flush=True)
                continue
            started = time.monotonic()
            doc = self.run(sha)
            if doc is None:
                print(f"commit {i + 1} {sha[:12]}: no document; stopping (runs.log)", flush=True)
                return 1
            gpu = doc["environment"]["gpu"]["name"]
            push = [*pushed, sha] if pushed else []
            self.keep(self.work / f"{sha[:12]}.json", "run", sha, note,
                      **({"push_commits": push} if push else {}))  # fmt: skip
            pushed = []
            shas.append(sha)
            docs.append(doc)
            took = time.monotonic() - started
            times = {k[0]: round(v, 2) for k, v in medians(doc).items()}
            print(f"commit {i + 1} {sha[:12]} {doc['status']} {took:.1f} s: {times}", flush=True)
            if i in (REGRESSION, PUSH_HEAD):
                started = time.monotonic()
                confirmed = self.confirm(shas[-2], sha, docs[-2], doc)
                wanted = wanted or confirmed
                print(f"confirmation {time.monotonic() - started:.1f} s", flush=True)
                if push and confirmed:
                    self.bisect(shas[-2], push[:-1], confirmed)
            manifest = {"recorded": {"gpu": gpu, "date": f"{datetime.now(UTC):%Y-%m-%d}",
                                     "how": self.how(gpu, made, wanted)},
                        "runs": self.entries}  # fmt: skip
            (self.bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        print(self.demo.git("log", "--oneline", "--first-parent"), flush=True)
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="an empty or new folder")
    p.add_argument("--budget", type=float, default=540.0, help="wall seconds in all")
    args = p.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        p.error(f"{args.out} is not empty")
    args.out.mkdir(parents=True, exist_ok=True)
    return Recorder(args.out, time.monotonic() + args.budget).record()


if __name__ == "__main__":
    sys.exit(main())

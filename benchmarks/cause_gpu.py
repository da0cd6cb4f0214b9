"""The cause benchmark (issue 15): ten slowdowns with one known cause each, through the real
runner and service, the top cause kernelwatch names beside the truth.

    # on the GPU host (CuPy, nvcc, ncu; the service's wheels on PYTHONPATH):
    python -m benchmarks.cause_gpu --record OUT
    # anywhere: replay what a recording saved through a real service, and print the table
    python -m benchmarks.cause_gpu --table OUT

A git repository of the suite in benchmarks/cause_suite gets three commits: a base, an A/A
commit (a README edit) and the head, whose variant.h switches every case to its slower code.
`kernelwatch-runner run` measures each commit (build with ptxas's report, correctness, timing,
the kernel timeline, one ncu pass) and writes its result document; the truth comes from
benchmarks/cause_truth.py (base and head builds interleaved, L2 flushed). `--table` starts a
real `kernelwatch serve` (SQLite), posts the three documents over HTTP, and reads each alert's
attribution: the kernel and the cause it ranks first, with the share of the slowdown it
explains. The documents are the fixtures that
tests/service/evaluation/alerts/test_cause_benchmark.py replays.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "cause_suite"))

from causesuite.workloads import CASES  # noqa: E402

from benchmarks.history_gpu import _wait, free_port, git, log, running  # noqa: E402

SUITE = ROOT / "benchmarks" / "cause_suite"
REPOSITORY = "bench/causes"
ADMIN = "causes-admin"
COMMITS = ("base", "aa", "head")
# Per case: the kernel whose time grew and the cause kind the attribution must rank first.
EXPECTED = {
    "dram": ("cause_dram", "dram"),
    "coalescing": ("cause_coalescing", "access_pattern"),
    "spills": ("cause_spills", "spills"),
    "occ_regs": ("cause_occ_regs", "occupancy_registers"),
    "occ_smem": ("cause_occ_smem", "occupancy_shared_memory"),
    "waves": ("cause_waves", "parallelism"),
    "instructions": ("cause_instructions", "instructions"),
    "bank_conflicts": ("cause_bank_conflicts", "bank_conflicts"),
    "second_kernel": ("cause_multi_second", "dram"),
    "atomic": ("cause_atomic", "atomics"),
}


def make_repository(repo: Path) -> list[str]:
    shutil.copytree(SUITE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for kind in COMMITS:
        if kind == "aa":
            (repo / "README.md").write_text("Notes that change no kernel.\n")
        elif kind == "head":
            variant = repo / "causesuite" / "cuda" / "variant.h"
            variant.write_text(variant.read_text().replace(" 0\n", " 1\n"))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{kind}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def query_metrics(out: Path) -> None:
    """Every name of the runner's fixed set against the list of metrics ncu knows on this GPU."""
    from runner.host.tools import find_ncu
    from runner.profile import ncu

    cmd = [find_ncu() or "ncu", "--query-metrics-mode", "all", "--query-metrics", "--csv"]
    known = subprocess.run(cmd, capture_output=True, text=True)
    (out / "query_metrics.csv.gz").write_bytes(gzip.compress(known.stdout.encode()))
    names = {line.split(",")[0].strip('"') for line in known.stdout.splitlines()}
    missing = [m for m in ncu.METRICS if m not in names]
    log(f"ncu knows {len(names)} names; of the fixed set, not in its list: {missing}")


def measure(work: Path, out: Path, kind: str, sha: str) -> None:
    started = time.monotonic()
    doc = out / f"{kind}.json"
    cmd = [sys.executable, "-m", "runner.cli", "run", "--repo", str(work / "repo"),
           "--commit", sha, "--branch", "main", "--repository-name", REPOSITORY,
           "--out", str(doc), "--cache", str(work / "cache")]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    (out / f"{kind}.log").write_text(done.stderr[-200_000:])
    if done.returncode != 0:
        raise SystemExit(f"runner failed on {kind}: {done.stderr[-3000:]}")
    doc.with_suffix(".json.gz").write_bytes(gzip.compress(doc.read_bytes()))
    doc.unlink()
    log(f"{kind} measured in {time.monotonic() - started:.0f} s")


def record(out: Path, work: Path) -> None:
    """The base and head documents, the truth, then the A/A commit's document (the order
    spends a short GPU lease on what the table cannot do without)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shas = dict(zip(COMMITS, make_repository(work / "repo"), strict=True))
    out.mkdir(parents=True, exist_ok=True)
    query_metrics(out)
    measure(work, out, "base", shas["base"])
    measure(work, out, "head", shas["head"])
    builds = {}
    for kind in ("base", "head"):
        tree = work / f"tree-{kind}"
        git(work / "repo", "worktree", "add", "-q", "--detach", str(tree), shas[kind])
        builds[kind] = str(work / f"build-{kind}")
        subprocess.run([sys.executable, "-m", "causesuite.build", "--out", builds[kind]],
                       cwd=tree, check=True, capture_output=True)  # fmt: skip
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "benchmarks.cause_truth", builds["base"],
                    builds["head"], str(out / "truth.json")], cwd=ROOT, check=True)  # fmt: skip
    log(f"truth measured in {time.monotonic() - started:.0f} s")
    measure(work, out, "aa", shas["aa"])


def documents(folder: Path) -> list[dict[str, Any]]:
    """The recorded documents in commit order (a recording cut short may lack the A/A one)."""
    paths = [folder / f"{k}.json.gz" for k in COMMITS]
    return [json.loads(gzip.decompress(p.read_bytes())) for p in paths if p.exists()]


def replay(docs: list[dict[str, Any]], work: Path) -> list[dict[str, Any]]:
    """Post the documents to a real `kernelwatch serve` and return its alerts, whole."""
    env = {**os.environ, "KERNELWATCH_DATABASE_URL": f"sqlite:///{work / 'kernelwatch.db'}",
           "KERNELWATCH_ADMIN_TOKEN": ADMIN,
           "KERNELWATCH_DATA_DIR": str(work / "data"),
           "KERNELWATCH_ALLOW_LOCAL_CLONE_URLS": "1"}  # fmt: skip
    port = free_port()
    cmd = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
    with running(cmd, env, work / "service.log"):
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                              headers={"Authorization": f"Bearer {ADMIN}"})  # fmt: skip
        _wait(lambda: client.get("/healthz").status_code == 200, 60)
        for doc in docs:
            client.post("/api/v1/runs", json=doc).raise_for_status()
            sha = doc["commit"]["sha"]

            def judged(sha: str = sha) -> bool:
                answer = client.get(f"/api/v1/commits/{sha}/metrics")
                return answer.status_code == 200 and not answer.json()["analysis_pending"]

            _wait(judged, 120)
        return [client.get(f"/api/v1/alerts/{a['id']}").json()
                for a in client.get("/api/v1/alerts").json()]  # fmt: skip


def rows(alerts: list[dict[str, Any]], truth: dict[str, Any]) -> list[dict[str, Any]]:
    by_case = {
        a["series"]["params"]["case"]: a for a in alerts if a["series"]["workload"] == "cause"
    }
    out = []
    for case, _, cause in CASES:
        alert = by_case.get(case)
        attribution = (alert or {}).get("attribution") or {}
        top = (attribution.get("causes") or [{}])[0]
        kernel, kind = EXPECTED[case]
        out.append({
            "case": case, "true_cause": cause,
            "truth": truth.get(f"cause[case={case}]", {}).get("change"),
            "reported": alert["change"] if alert else None,
            "top": top.get("label", "-") if alert else "no alert",
            "kernel": top.get("kernel"), "kind": top.get("kind"),
            "share": top.get("workload_share"), "explained_ns": top.get("explained_ns"),
            "right": bool(alert) and top.get("kernel") == kernel and top.get("kind") == kind,
            "summary": alert["summary"] if alert else "",
        })  # fmt: skip
    return out


def render(table: list[dict[str, Any]]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:+.1%}"

    lines = ["| case | true cause | truth | reported | top cause named | explained | right |",
             "|---|---|--:|--:|---|--:|:-:|"]  # fmt: skip
    for r in table:
        share = "-" if r["share"] is None else f"{r['share']:.0%}"
        top = f"{r['kernel']}: {r['top']}" if r["kernel"] else r["top"]
        right = "yes" if r["right"] else "NO"
        lines.append(f"| {r['case']} | {r['true_cause']} | {pct(r['truth'])} | "
                     f"{pct(r['reported'])} | {top} | {share} | {right} |")  # fmt: skip
    right = sum(r["right"] for r in table)
    lines.append(f"\ntop cause right: {right}/{len(table)} (target >= 9/10): "
                 f"{'PASS' if right >= 9 else 'FAIL'}")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--record", type=Path, metavar="OUT", help="measure on this GPU host")
    what.add_argument("--table", type=Path, metavar="DIR", help="replay a recording, print")
    p.add_argument("--work", type=Path, default=Path("/tmp/kw-causes"))
    args = p.parse_args(argv)
    folder = args.record or args.table
    if args.record:
        record(args.record, args.work)
    truth_file = folder / "truth.json"
    truth = json.loads(truth_file.read_text())["workloads"] if truth_file.exists() else {}
    with tempfile.TemporaryDirectory(prefix="kw-causes-") as tmp:
        alerts = replay(documents(folder), Path(tmp))
    table = rows(alerts, truth)
    (folder / "table.json").write_text(json.dumps(table, indent=1))
    print(render(table))
    for r in table:
        print(f"  {r['case']}: {r['summary']}")
    return 0 if sum(r["right"] for r in table) >= 9 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Flat reads (issue 17, item 5): the read API and the pages cost the same however long the
history behind them, measured on databases of several sizes.

    python -m benchmarks.service_flat [--database postgres|sqlite] [--commits 200,1000,10000]
        [--series 200] [--samples 30] [--requests 200] [--endpoints commit,page /]
        [--ancestors 200] [--ncu-metrics 72] [--findings 5] [--kernels 1] [--ncu default,all]
        [--statistics none|analysed]

For each size: a scratch database filled like benchmarks/service_scale.py's (--series results
per commit, raw samples) and `kernelwatch serve` on it, all at once; then from this process with
httpx the same requests at every size, taken in turn (one request to each size, then the next:
a drift of the machine weighs on every size alike): one commit's metrics, a series' newest points
(as many as the smallest size has commits), the compare of two adjacent commits, and the pages
(half of the commits asked for among the newest 100, half anywhere). Prints p50 / p95 ms per
endpoint and size and the largest size's p50 against the smallest's, PASS at most FLAT_RATIO;
exits 1 on a FAIL.

The history is filled as a real runner's documents leave it (benchmarks/scale_shape.py): each
commit with its 200 first-parent ancestors, each kernel's capture with the runner's whole
fixed ncu metric set and five rule findings; --ancestors, --ncu-metrics, --findings and
--kernels make it smaller or larger. The fill leaves PostgreSQL's planner no statistics, as a
history stored through the API leaves them where autovacuum has not analysed them since (off on
this machine, behind a growing history elsewhere): what the served reads then see is what the
service's own analysis worker makes of that (it ANALYZEs stale tables on start and every minute:
service.store.verdicts.planner_statistics); --statistics analysed has the fill analyse them first
(what it did before issue 34 item 7, under which the commit read looked flat while a history stored
through the API had it grow). --ncu times the commit read at each of those
values of its `ncu` parameter (`default`: the request without it). --endpoints keeps the
endpoints whose names contain one of the words.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from benchmarks.scale_fill import commit_sha, fill
from benchmarks.scale_shape import Shape
from benchmarks.service_scale import page_paths, scratch_database, serve, settle
from service.core.db import create_db_engine
from service.core.migrate import upgrade
from service.core.settings import Settings

FLAT_RATIO = 1.2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="service_flat", description=__doc__.split("\n")[0])
    p.add_argument("--database", choices=["sqlite", "postgres"], default="postgres")
    p.add_argument("--commits", default="200,1000,10000", help="history sizes, comma-separated")
    p.add_argument("--series", type=int, default=200)
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--endpoints", default="", help="comma-separated words; default: every one")
    p.add_argument("--ancestors", type=int, default=Shape.ancestors)
    p.add_argument("--ncu-metrics", type=int, default=Shape.ncu_metrics)
    p.add_argument("--findings", type=int, default=Shape.findings)
    p.add_argument("--kernels", type=int, default=Shape.kernels)
    p.add_argument("--ncu", default="default",
                   help="the commit read's ncu values to time, comma-separated (default: none "
                   "given)")  # fmt: skip
    p.add_argument("--statistics", choices=["none", "analysed"], default="none")
    p.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def paths(rng: np.random.Generator, commits: int, args: argparse.Namespace, points: int) -> dict:
    """The requests of one measurement, by endpoint (each list: warm-ups first)."""
    n = args.requests + max(5, args.requests // 10)
    newest = rng.integers(max(1, commits - 100), commits, n // 2)
    picks = rng.permutation(np.concatenate([newest, rng.integers(1, commits, n - n // 2)]))
    series = rng.integers(1, args.series + 1, n)
    out = {
        f"commit metrics{'' if level == 'default' else ' ?ncu=' + level}": [
            f"/api/v1/commits/{commit_sha(int(i))}/metrics"
            + ("" if level == "default" else f"?ncu={level}")
            for i in picks
        ]
        for level in args.ncu.split(",")
    }
    out |= {
        f"series ({points} points)": [
            f"/api/v1/series?id={s}&branch=main&limit={points}" for s in series
        ],
        "compare": [
            f"/api/v1/compare?base={commit_sha(int(i) - 1)}&head={commit_sha(int(i))}"
            for i in picks
        ],
    }
    for page, listed in page_paths(rng, commits, max(10, args.requests // 4) + 3).items():
        out[f"page {page}"] = listed
    words = [w for w in args.endpoints.split(",") if w.strip()]
    return {e: listed for e, listed in out.items() if not words or any(w in e for w in words)}


def filled(stack: contextlib.ExitStack, commits: int, args: argparse.Namespace) -> str:
    """The URL of a scratch database of `commits` commits (dropped when `stack` closes)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"kw_flat_{commits}_"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    url = stack.enter_context(scratch_database(args.database, args, workdir))
    engine = create_db_engine(Settings(database_url=url).effective_database_url)
    try:
        upgrade(engine)
        started = time.perf_counter()
        shape = Shape(ancestors=args.ancestors, ncu_metrics=args.ncu_metrics,
                      findings=args.findings, kernels=args.kernels)  # fmt: skip
        rows = fill(engine, commits=commits, series=args.series, samples=args.samples,
                    seed=args.seed, log=lambda m: None, shape=shape,
                    statistics=args.statistics == "analysed")  # fmt: skip
        print(f"[{commits} commits] {rows:,} rows in {time.perf_counter() - started:.0f} s",
              flush=True)  # fmt: skip
    finally:
        engine.dispose()
    return url


def interleaved(clients: dict[int, httpx.Client], listed: dict[int, list[str]]) -> dict:
    """p50, p95, max ms and mean answer bytes per size of GETs taken in turn, one size after the
    other, so that a drift of the machine (2 cores, the database beside the service) weighs on
    each alike."""
    warm = max(3, len(next(iter(listed.values()))) // 11)
    for size, client in clients.items():
        for path in listed[size][:warm]:
            client.get(path).raise_for_status()
    took: dict[int, list[float]] = {size: [] for size in clients}
    sizes: dict[int, list[int]] = {size: [] for size in clients}
    for k in range(warm, len(next(iter(listed.values())))):
        for size, client in clients.items():
            started = time.perf_counter()
            answer = client.get(listed[size][k]).raise_for_status()
            took[size].append((time.perf_counter() - started) * 1e3)
            sizes[size].append(len(answer.content))
    return {
        s: (*np.percentile(v, [50, 95]).tolist(), max(v), float(np.mean(sizes[s])))
        for s, v in took.items()
    }


def measure(sizes: list[int], args: argparse.Namespace) -> dict[int, dict[str, tuple]]:
    """Every size filled and served at once, then each endpoint timed on all of them in turn."""
    with contextlib.ExitStack() as stack:
        clients = {}
        for size in sizes:
            url = filled(stack, size, args)
            logs = Path(tempfile.mkdtemp(prefix="kw_flat_serve_"))
            stack.callback(shutil.rmtree, logs, ignore_errors=True)
            base = stack.enter_context(serve(url, logs))
            settle(args.database, url)
            clients[size] = stack.enter_context(httpx.Client(base_url=base, timeout=120))
        requests = {s: paths(np.random.default_rng(args.seed), s, args, sizes[0]) for s in sizes}
        out: dict[int, dict[str, tuple]] = {s: {} for s in sizes}
        for endpoint in requests[sizes[0]]:
            got = interleaved(clients, {s: requests[s][endpoint] for s in sizes})
            for size, ms in got.items():
                out[size][endpoint] = ms
            print(f"{endpoint}: " + ", ".join(f"{s}: p50 {ms[0]:.1f} ms" for s, ms in got.items()),
                  flush=True)  # fmt: skip
        return out


def table(sizes: list[int], measured: dict[int, dict[str, tuple]]) -> tuple[str, bool]:
    smallest = sizes[0]
    head = "| endpoint | " + " | ".join(f"{s:,} commits p50 / p95 ms" for s in sizes)
    lines = [
        head + f" | largest / smallest p50 (≤ {FLAT_RATIO}) | answer kB |",
        "|---|" + "--:|" * (len(sizes) + 2),
    ]
    ok = True
    for endpoint in measured[smallest]:
        cells = [f"{measured[s][endpoint][0]:.1f} / {measured[s][endpoint][1]:.1f}" for s in sizes]
        ratio = measured[sizes[-1]][endpoint][0] / measured[smallest][endpoint][0]
        ok &= ratio <= FLAT_RATIO
        verdict = "PASS" if ratio <= FLAT_RATIO else "FAIL"
        kb = measured[sizes[-1]][endpoint][3] / 1e3
        lines.append(f"| {endpoint} | " + " | ".join(cells) + f" | {ratio:.2f} {verdict} "
                     f"| {kb:,.0f} |")  # fmt: skip
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = sorted(int(s) for s in args.commits.split(",") if s.strip())
    if len(sizes) < 2 or sizes[0] < 2:
        raise SystemExit("give at least two sizes of 2 commits or more, e.g. --commits 200,10000")
    measured = measure(sizes, args)
    text, ok = table(sizes, measured)
    print(f"\nkernelwatch flat reads on {args.database}, {args.series} series, "
          f"{args.samples} samples per result, {args.ancestors} ancestors per commit, "
          f"{args.kernels} kernel(s) per workload with {args.ncu_metrics} ncu values and "
          f"{args.findings} findings each, planner statistics {args.statistics}")  # fmt: skip
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

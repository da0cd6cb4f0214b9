"""The analysis half of benchmarks/signal_quality_gpu.py: recorded runs judged by the service's
own decision (needs the service's dependencies: scipy)."""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import signal_quality_workloads as sqw  # noqa: E402

FORMAT = "kernelwatch-signal-quality-gpu/1"
TARGETS = {"long": 0.02, "mid": 0.05, "short": 0.10}
RECALL_TARGET = 0.95
AA_TARGET = 0.01


def log(line: str) -> None:
    print(line, flush=True)


# --------------------------------------------------------------------------------------------
# Analysis (anywhere with scipy: the service's own verdict code)
# --------------------------------------------------------------------------------------------


@dataclass
class Pool:
    """The recorded runs of one workload: (round, samples of all processes) per run."""

    rounds: list[int]
    samples: list[np.ndarray]
    medians: list[float]
    methods: set[str]


@dataclass
class ClassPools:
    key: str
    name: str
    target: float
    base: Pool
    heads: dict[float, Pool]
    work: dict[float, float]  # magnitude -> work scale (n / base n)


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    with path.open("rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    with opener(path, "rt") as f:
        data = json.load(f)
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file (format {data.get('format')!r})")
    return data


def pools(data: dict[str, Any]) -> tuple[list[ClassPools], int]:
    """Per class, the base pool and the heads per magnitude; and how many runs were dropped
    because a process of theirs failed."""
    dropped = 0
    out = []
    for c in data["plan"]["classes"]:
        by_magnitude: dict[float, Pool] = {}
        for magnitude, n in c["n"].items():
            wid = sqw.InjectedDropout(c["key"], float(magnitude), int(n)).id
            pool = Pool([], [], [], set())
            for r in data["rounds"]:
                results = r["results"].get(wid)
                if not results or any(p is None or not p["samples"] for p in results):
                    dropped += results is not None
                    continue
                samples = np.concatenate(
                    [np.asarray(p["samples"], dtype=np.float64) for p in results]
                )
                pool.rounds.append(int(r["index"]))
                pool.samples.append(samples)
                pool.medians.append(float(np.percentile(samples, 50)))
                pool.methods.update(p.get("method", "?") for p in results)
            by_magnitude[float(magnitude)] = pool
        base_n = c["n"]["0"]
        out.append(
            ClassPools(
                key=c["key"],
                name=c["name"],
                target=TARGETS.get(c["key"], 0.10),
                base=by_magnitude.pop(0.0),
                heads=by_magnitude,
                work={float(m): int(n) / base_n for m, n in c["n"].items() if float(m)},
            )
        )
    return out, dropped


@dataclass
class Tally:
    recall: dict[tuple[str, float], float]
    false_alerts: dict[str, float]
    aa_total: dict[str, int]
    heads_caught: dict[tuple[str, float], tuple[int, int]]  # (heads caught in most trials, heads)
    measured: dict[tuple[str, float], float]  # median head run / median baseline run - 1
    k: dict[str, int]


def _pick(rng: np.random.Generator, pool: Pool) -> int:
    return int(rng.integers(len(pool.rounds)))


def _baseline(rng: np.random.Generator, base: Pool, exclude_round: int, k: int) -> list[int]:
    candidates = [i for i, r in enumerate(base.rounds) if r != exclude_round]
    return [candidates[i] for i in rng.choice(len(candidates), size=k, replace=False)]


def measure(classes: list[ClassPools], trials: int, aa_per_class: int, seed: int, k: int) -> Tally:
    """`trials` simulated runs, each with, per class, one series per magnitude and
    `aa_per_class` A/A series, decided together as at ingest."""
    from service.analysis.decision import decide
    from service.analysis.verdicts import compare

    rng = np.random.default_rng(seed)
    hits: dict[tuple[str, float], int] = {}
    per_head: dict[tuple[str, float], dict[int, list[int]]] = {}
    aa_alerts = {c.key: 0 for c in classes}
    aa_total = {c.key: 0 for c in classes}
    ks: dict[str, int] = {}
    for c in classes:
        ks[c.key] = min(k, len(c.base.rounds) - 1)
        if ks[c.key] < 3:
            raise ValueError(
                f"class {c.name}: {len(c.base.rounds)} baseline runs recorded; need >= 4"
            )
        for m, pool in c.heads.items():
            if not pool.rounds:
                raise ValueError(f"class {c.name}: no recorded run of the {m:.0%} head")
            hits[(c.key, m)] = 0
            per_head[(c.key, m)] = {}
    for _ in range(trials):
        series: list[tuple[str, float, int]] = []  # (class, magnitude or 0 for A/A, head index)
        comparisons = []
        for c in classes:
            kk = ks[c.key]
            wanted = [(m, c.heads[m]) for m in sorted(c.heads)] + [(0.0, c.base)] * aa_per_class
            for m, pool in wanted:
                head = _pick(rng, pool)
                chosen = _baseline(rng, c.base, pool.rounds[head], kk)
                result = compare(
                    len(comparisons),
                    pool.samples[head],
                    [c.base.samples[i] for i in chosen],
                    baseline_medians=[c.base.medians[i] for i in chosen],
                )
                assert result is not None
                comparisons.append(result)
                series.append((c.key, m, head))
        for (key, m, head), d in zip(series, decide(comparisons), strict=True):
            if m == 0.0:
                aa_total[key] += 1
                aa_alerts[key] += d.verdict in ("regressed", "improved")
            else:
                caught = d.verdict == "regressed"
                hits[(key, m)] += caught
                per_head[(key, m)].setdefault(head, []).append(caught)
    recall = {cell: hits[cell] / trials for cell in hits}
    heads_caught = {
        cell: (sum(np.mean(v) >= 0.5 for v in heads.values()), len(heads))
        for cell, heads in per_head.items()
    }
    measured = {}
    for c in classes:
        base = float(np.median(c.base.medians))
        for m, pool in c.heads.items():
            measured[(c.key, m)] = float(np.median(pool.medians)) / base - 1
    false_alerts = {key: aa_alerts[key] / max(aa_total[key], 1) for key in aa_total}
    return Tally(recall, false_alerts, aa_total, heads_caught, measured, ks)


def header(
    data: dict[str, Any],
    classes: list[ClassPools],
    dropped: int,
    trials: int,
    aa_per_class: int,
    k: int,
) -> list[str]:
    env = data.get("environment", {})
    clocks: list[float] = []
    throttles: set[str] = set()
    for r in data["rounds"]:
        for results in r["results"].values():
            for p in results:
                if p and p.get("sm_clock_mhz"):
                    clocks.append(float(p["sm_clock_mhz"]))
                if p:
                    throttles.update(p.get("throttle_reasons") or [])
    rounds = len(data["rounds"])
    series = len(classes) * (len(classes[0].heads) + aa_per_class) if classes else 0
    clock_text = f"{min(clocks):.0f}-{max(clocks):.0f} MHz" if clocks else "not read"
    sm_max = env.get("clocks_mhz", {}).get("sm_max", "?")
    t = data["timing"]
    timing = (
        f"{t['min_samples']}-{t['max_samples']} samples, <= {t['max_seconds']:g} s, "
        f"stop at {t['target_rel_spread']:.1%} spread or settled"
    )
    inject = data.get("inject")
    calibration = data.get("calibration") if inject == "time" else None
    if calibration:
        curves = "; ".join(
            f"{c.name} " + "/".join(f"{r:+.1%}" for r in _calibrated(v))
            for c, v in zip(classes, calibration["classes"].values(), strict=True)
        )
        steps = "/".join(f"{s:+.0%}" for s in calibration["steps"])
        fitted = all("fitted" in v for v in calibration["classes"].values())
        fit = "quadratic fit, " if fitted else "interpolated; "
        how = (
            "work scaled so that the time grows by the magnitude, read off a calibration in "
            f"{calibration['processes']} processes ({fit}time change at {steps} work: {curves})"
        )
    else:
        how = "work scaled by (1 + magnitude)"
    lines = [
        f"signal quality on {env.get('gpu', {}).get('name', '?')} (driver "
        f"{env.get('driver_version', '?')}, CUDA {env.get('cuda_runtime_version', '?')}), "
        f"recorded {data.get('created_at', '?')} at commit {_short(data.get('commit'))}",
        f"  SM clock seen while sampling {clock_text} (max {sm_max} MHz); throttle reasons seen: "
        f"{', '.join(sorted(throttles)) or 'none'}",
        f"  measured by the runner (runner.measure.phase, {data['processes']} processes per run; "
        f"[timing] {timing}), {data.get('wall_s', '?')} s of wall time",
        f"  injected: the suite's dropout_fwd on more elements, {how}",
        f"  recorded: {rounds} independent runs of every workload (each {data['processes']} "
        f"processes; {dropped} runs dropped for a failed process)",
        f"  trials: {trials} simulated runs of {series} series (per class one per magnitude and "
        f"{aa_per_class} A/A), decided together (BH q = 0.01, as at ingest); each series' head is "
        f"a recorded run drawn from its pool, its baseline K = {k} runs drawn without "
        "replacement from the class's baseline runs of other rounds. The trials resample the "
        "recorded runs: each cell rests on its pool's independent runs (`heads`), not on the "
        "number of trials.",
    ]
    for c in classes:
        lines.append(
            f"  {c.name:<9}: baseline median {np.median(c.base.medians):8.2f} us over "
            f"{len(c.base.rounds)} runs, run-to-run spread (MAD/median) "
            f"{_mad(c.base.medians):.2%}, timer {'/'.join(sorted(c.base.methods))}"
        )
    return lines


def _short(commit: str | None) -> str:
    if not commit:
        return "?"
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def _calibrated(v: dict[str, Any]) -> list[float]:
    """The calibration's time change per step: fitted, or (recordings before the fit) the
    median ratio over the processes at each step."""
    if "fitted" in v:
        return list(v["fitted"])
    return [r - 1 for _, r in v["points"]]


def _mad(values: list[float]) -> float:
    v = np.asarray(values)
    center = float(np.median(v))
    return float(np.median(np.abs(v - center))) * 1.4826 / center if center else 0.0


def report(classes: list[ClassPools], tally: Tally) -> bool:
    magnitudes = sorted(classes[0].heads) if classes else []
    ok = True
    print("class      " + "".join(f"{m:>8.0%}" for m in magnitudes) + "   A/A alerts  target")
    for c in classes:
        cells = "".join(f"{tally.recall[(c.key, m)]:>8.1%}" for m in magnitudes)
        met = all(tally.recall[(c.key, m)] >= RECALL_TARGET for m in magnitudes if m >= c.target)
        met = met and tally.false_alerts[c.key] <= AA_TARGET
        ok = ok and met
        print(
            f"{c.name:<11}{cells}   {tally.false_alerts[c.key]:>9.2%}   "
            f"{'PASS' if met else 'FAIL'} (>={RECALL_TARGET:.0%} at >={c.target:.0%}, "
            f"<={AA_TARGET:.0%} A/A)"
        )
        measured = "".join(f"{tally.measured[(c.key, m)]:>+8.1%}" for m in magnitudes)
        print(f"  measured {measured}   (median head run vs median baseline run)")
        work = "".join(f"{c.work[m] - 1:>+8.1%}" for m in magnitudes)
        print(f"  work     {work}   (elements added)")
        heads = "".join(f"{'{}/{}'.format(*tally.heads_caught[(c.key, m)]):>8}" for m in magnitudes)
        print(f"  heads    {heads}   (recorded head runs caught in most of their trials)")
    aa = sum(tally.aa_total.values())
    print(
        f"A/A: {aa} comparisons in all, "
        f"{sum(tally.false_alerts[k] * tally.aa_total[k] for k in tally.aa_total):.0f} alerts"
    )
    return ok


def analyse(args: argparse.Namespace) -> int:
    from service.evaluation.verdicts.baseline import K

    data = load(args.analyse)
    classes, dropped = pools(data)
    k = args.k or K
    for line in header(data, classes, dropped, args.trials, args.aa_per_class, k):
        print(line)
    tally = measure(classes, args.trials, args.aa_per_class, args.seed, k)
    if any(v < k for v in tally.k.values()):
        print(f"  note: baselines shrunk to {tally.k} runs (too few recorded)")
    return 0 if report(classes, tally) else 1

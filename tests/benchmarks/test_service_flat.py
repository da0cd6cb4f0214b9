"""benchmarks/service_flat.py in parts: the requests it times answer on a history it fills, its
timing of them in turn, its table and verdict from given timings, and its arguments (the whole
run starts a server per size: minutes, not a test's seconds)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import httpx
import numpy as np
import pytest

from benchmarks import service_flat
from benchmarks.scale_fill import commit_sha
from service.api.app import create_app
from service.core.settings import Settings
from tests.live_server import LiveServer

SMALL = ["--database", "sqlite", "--series", "3", "--samples", "4", "--requests", "20",
         "--ancestors", "2", "--ncu-metrics", "2", "--findings", "1"]  # fmt: skip


def test_the_requests_of_one_measurement() -> None:
    args = service_flat.parse_args([*SMALL, "--ncu", "default,all"])
    listed = service_flat.paths(np.random.default_rng(1), 500, args, points=10)
    assert list(listed) == [
        "commit metrics", "commit metrics ?ncu=all", "series (10 points)", "compare", "page /",
        "page /trends?workload=W", "page /commits/{sha}", "page /compare?base=&head=",
        "page /alerts",
    ]  # fmt: skip
    # --requests timed, and a tenth (at least 5) before them to warm up; pages a quarter.
    assert {len(v) for k, v in listed.items() if not k.startswith("page")} == {25}
    assert {len(v) for k, v in listed.items() if k.startswith("page")} == {13}
    shas = {commit_sha(i): i for i in range(500)}
    picked = [shas[re.search(r"commits/(\w+)/", p)[1]] for p in listed["commit metrics"]]
    # Half among the newest 100 commits, half anywhere; never the first (compare's base).
    assert min(picked) >= 1 and sum(p >= 400 for p in picked) >= 12
    assert all(p.endswith("/metrics?ncu=all") for p in listed["commit metrics ?ncu=all"])
    for path in listed["compare"]:
        base, head = re.fullmatch(r"/api/v1/compare\?base=(\w+)&head=(\w+)", path).groups()
        assert shas[base] == shas[head] - 1  # adjacent commits
    series = [int(re.search(r"id=(\d+)", p)[1]) for p in listed["series (10 points)"]]
    assert set(series) <= {1, 2, 3} and all("limit=10" in p for p in listed["series (10 points)"])
    kept = service_flat.paths(np.random.default_rng(1), 50, service_flat.parse_args(
        [*SMALL, "--endpoints", "compare,alerts"]), points=10)  # fmt: skip
    assert list(kept) == ["compare", "page /compare?base=&head=", "page /alerts"]


def test_every_request_answers_on_the_history_it_fills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request that found nothing (a commit or series the fill did not make) would be timed
    as a fast 404; the measurement stops on one instead."""
    args = service_flat.parse_args(SMALL)
    with contextlib.ExitStack() as stack:
        url = service_flat.filled(stack, 4, args)
        assert re.fullmatch(r"\[4 commits\] [\d,]+ rows in \d+ s\n", capsys.readouterr().out)
        settings = Settings(database_url=url, data_dir=tmp_path, analysis_delay_seconds=0)
        live = stack.enter_context(LiveServer(create_app(settings, migrate=False)))
        client = stack.enter_context(httpx.Client(base_url=live.url, timeout=60))
        listed = service_flat.paths(np.random.default_rng(1), 4, args, points=4)
        wrong = {p: client.get(p).status_code for v in listed.values() for p in set(v)}
        assert {p: s for p, s in wrong.items() if s != 200} == {}
        # Taken in turn at two "sizes" (the same server): p50 <= p95 <= max, answers' bytes.
        timed = service_flat.interleaved({4: client, 5: client},
                                         {4: listed["compare"], 5: listed["compare"]})  # fmt: skip
        assert set(timed) == {4, 5}
        for p50, p95, slowest, size in timed.values():
            assert 0 < p50 <= p95 <= slowest and size > 100
        missing = [f"/api/v1/commits/{'f' * 40}/metrics"] * 4
        with pytest.raises(httpx.HTTPStatusError, match="404"):
            service_flat.interleaved({4: client}, {4: missing})
    assert not Path(url.removeprefix("sqlite:///")).exists()  # the scratch history is gone


def test_the_table_passes_at_most_the_flat_ratio() -> None:
    measured = {
        200: {"commit metrics": (10.0, 12.0, 15.0, 4000.0), "compare": (5.0, 6.0, 7.0, 1500.0)},
        10000: {"commit metrics": (12.0, 14.0, 20.0, 4200.0), "compare": (6.5, 9.0, 9.5, 800.0)},
    }
    text, ok = service_flat.table([200, 10000], measured)
    assert not ok
    assert text.splitlines() == [
        "| endpoint | 200 commits p50 / p95 ms | 10,000 commits p50 / p95 ms | largest / smallest "
        "p50 (≤ 1.2) | answer kB |",
        "|---|--:|--:|--:|--:|",
        "| commit metrics | 10.0 / 12.0 | 12.0 / 14.0 | 1.20 PASS | 4 |",
        "| compare | 5.0 / 6.0 | 6.5 / 9.0 | 1.30 FAIL | 1 |",
    ]
    flat = {200: {"compare": (5.0, 6.0, 7.0, 1500.0)}, 10000: {"compare": (5.5, 6.0, 7.0, 1.0)}}
    _, ok = service_flat.table([200, 10000], flat)
    assert ok


@pytest.mark.parametrize("commits", ["200", "1,5000", "200,,"])
def test_fewer_than_two_usable_sizes_are_refused(commits: str) -> None:
    with pytest.raises(SystemExit) as refused:
        service_flat.main([*SMALL, "--commits", commits])
    assert refused.value.code == (
        "give at least two sizes of 2 commits or more, e.g. --commits 200,10000"
    )


def test_an_unknown_database_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        service_flat.parse_args(["--database", "mysql"])
    assert refused.value.code == 2
    assert "argument --database: invalid choice: 'mysql'" in capsys.readouterr().err

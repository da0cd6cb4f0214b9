"""The H200 history recorded under the old rules (benchmarks/results/history_h200_before),
judged again by today's analysis on the CPU: the same measurements of kernels whose runs wander
(a tiled SGEMM that a commit made spill, an SGEMM that always spills, an L2-bound kernel behind
a neighbour, short kernels whose whole runs sat off together) must give no verdict and no work
notice on a commit that changed nothing, and still every change the targets ask for."""

from __future__ import annotations

from pathlib import Path

from benchmarks import history_replay
from benchmarks.history_gpu import _load, rows
from benchmarks.history_table import score

RESULTS = Path(history_replay.__file__).parent / "results"


def test_the_recorded_h200_history_is_judged_without_a_false_verdict_or_notice() -> None:
    recorded = _load(RESULTS / "history_h200_before" / "history.json.gz")
    before = score(rows(recorded))
    # What the recording's own verdicts said: the rules this replay must not fall back to.
    assert (before.false_regressions, before.false_improvements) == (3, 1)
    assert before.false_notices == 32
    replayed = history_replay.replay(RESULTS / "history_h200_before")
    after = score(rows(replayed))
    assert (after.false_regressions, after.false_improvements, after.false_notices) == (0, 0, 0)
    assert after.false_after_shift == 0
    assert all(caught == due > 0 for caught, due in after.recall.values()), after.recall
    table = {(r.commit, r.series): r for r in rows(replayed)}
    spilled = table[(3, "tiled[n=2048]")]
    assert spilled.verdict == "regressed" and spilled.changed  # the spill itself
    for commit in (4, 5, 6):  # the innocent commits right after it, on a young level
        assert table[(commit, "tiled[n=2048]")].verdict == "unchanged", commit

"""The CPU signal-quality harness runs the real analysis and meets the targets it prints."""

from __future__ import annotations

from benchmarks import signal_quality


def test_harness_prints_recall_and_false_alerts(capsys) -> None:
    recall, false_alerts = signal_quality.measure(trials=600, seed=1)
    assert signal_quality.report(recall, false_alerts)
    out = capsys.readouterr().out
    assert ">= 50 us" in out and "A/A alerts" in out
    # A 1% change of a long kernel sits at its floor; 10% is caught in every class.
    assert recall[(">= 50 us", 0.10)] == 1.0
    assert recall[("10-50 us", 0.01)] < 0.5
    assert max(false_alerts.values()) <= 0.01

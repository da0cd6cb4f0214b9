"""Each rule a verdict stands on, broken by one line: the test that pins it must turn red.

    python -m benchmarks.rule_mutations [--postgres URL]

For every mutation, a copy of the tree gets the one-line change and runs the test file that pins
the rule (tests/service/histories/: test_rules.py, test_step_and_fix.py, test_wander.py; the tests
of service.analysis and of the replayed H200 history); the table says whether it failed, as it
must. Exit status 1 when a broken rule went unnoticed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (rule, file, the line as it is, the line broken, the test that must fail)
MUTATIONS = [
    (
        "a commit measured twice: the newer run is compared",
        "service/store/ancestry.py",
        "key=lambda r: (position[r[2]], -r[0])",
        "key=lambda r: (position[r[2]], r[0])",
        "tests/service/histories/test_rules.py::test_a_commit_measured_twice_is_compared_by_its_newer_run",
    ),
    (
        "two runs at a commit: the newest wins in the commit's metrics",
        "service/evaluation/commit_metrics.py",
        ".order_by(Run.finished_at.desc(), Run.id.desc())",
        ".order_by(Run.finished_at.asc(), Run.id.asc())",
        "tests/service/histories/test_rules.py::test_the_newest_run_of_a_suite_and_fingerprint_wins_in_the_"
        "commit_metrics",
    ),
    (
        "one confirmation of several alerts corrects for their number",
        "service/evaluation/alerts.py",
        "measured = remeasure(head_samples, base_samples, ALPHA / len(alerts))",
        "measured = remeasure(head_samples, base_samples, ALPHA)",
        "tests/service/histories/test_rules.py::test_one_confirmation_of_several_alerts_corrects_for_their_"
        "number",
    ),
    (
        "the baseline starts at the last level shift",
        "service/analysis/segments.py",
        '    if not points:\n        return Segment(0, "history")',
        '    if not points or True:\n        return Segment(len(points), "history")',
        "tests/service/histories/test_step_and_fix.py::test_a_step_its_innocent_successors_and_the_fix_posted_"
        "one_by_one",
    ),
    (
        "a regression found at a commit is a level shift",
        "service/evaluation/baseline.py",
        '_SHIFT_VERDICTS = {"regressed": "regression", "improved": "improvement"}',
        "_SHIFT_VERDICTS: dict[str, str] = {}",
        "tests/service/histories/test_step_and_fix.py::test_a_step_its_innocent_successors_and_the_fix_posted_"
        "one_by_one",
    ),
    (
        "the timing method is part of a series' identity",
        "service/store/workload_rows.py",
        "        timing.method,\n    ]",
        "    ]",
        "tests/service/histories/test_method_series.py",
    ),
    (
        "p-values are corrected for the run's number of series (Benjamini-Hochberg)",
        "service/analysis/verdicts.py",
        'q_values = false_discovery_control([c.p_value for c in comparisons], method="bh")',
        "q_values = [c.p_value for c in comparisons]",
        "tests/service/analysis/test_wander.py::test_benjamini_hochberg_holds_a_lone_p_value_of_"
        "a_large_run_to_its_rank",
    ),
    (
        "a verdict's false-discovery rate is 1%",
        "service/analysis/verdicts.py",
        "Q = 0.01",
        "Q = 0.05",
        "tests/service/analysis/test_wander.py::test_q_is_one_percent",
    ),
    (
        "a commit measured twice: its newest run is its point in the change points",
        "service/evaluation/changepoints.py",
        "        if cid in position:\n            newest[sid, cid] = median",
        "        if cid in position and (sid, cid) not in newest:\n"
        "            newest[sid, cid] = median",
        "tests/service/evaluation/test_changepoints.py::test_a_commit_measured_twice_is_its_"
        "newest_runs_median",
    ),
    (
        "the timing process, not the sample, is the unit of the test",
        "service/analysis/verdicts.py",
        "tests[i] = wander.test(head, base, level) if testable else None",
        "tests[i] = None",
        "tests/service/histories/test_wander.py",
    ),
    (
        "a change on a level of one run is pending until the next run",
        "service/analysis/verdicts.py",
        "        elif not c.young:",
        "        elif True:",
        "tests/service/histories/test_wander.py",
    ),
    (
        "a young level's floor is what its processes and the series' history imply",
        "service/analysis/verdicts.py",
        "raw = max(noise_floor(medians), NOISE_MULTIPLE * level.run_spread)",
        "raw = noise_floor(medians)",
        "tests/service/analysis/test_wander.py::test_a_young_levels_floor_is_what_its_processes_"
        "imply",
    ),
    (
        "a run the next one showed off its level stays out of the level's baseline",
        "service/evaluation/baseline.py",
        "kept = [r for r in level if r[0] not in outliers] or level",
        "kept = level",
        "tests/service/histories/test_wander.py",
    ),
    (
        "a level that began at a shift is young until its third result",
        "service/analysis/wander.py",
        '    return MIN_LEVEL if segment_kind == "history" else MIN_LEVEL_AFTER_SHIFT',
        "    return MIN_LEVEL",
        "tests/service/histories/test_wander.py",
    ),
    (
        "a noisy counter's tolerance bounds the next move by how few pairs taught it",
        "service/analysis/work.py",
        "        return max(floor, float(student_t.ppf(1 - NOTICE_ALPHA / 2, self.pairs)) "
        "* self.rms)",
        "        return max(floor, 3.0 * self.largest)",
        "tests/service/evaluation/test_work_counters.py::test_a_few_pairs_bound_the_next_move_by_how_"
        "little_they_know",
    ),
    (
        "a counter of what the caches did raises no notice until shown steady",
        "service/analysis/work.py",
        "return self.pairs >= MIN_PAIRS or self.counter in EXACT",
        "return True",
        "tests/benchmarks/test_history_replay.py",
    ),
    (
        "a counter's noise is learned only from two measurements of unchanged code",
        "service/analysis/work.py",
        "if before is None or not capture.profiled_at or capture.profiled_at == "
        "before.profiled_at:",
        "if before is None:",
        "tests/service/evaluation/test_work_counters.py::test_the_counters_of_what_the_caches_did_"
        "are_learning_until_shown_steady",
    ),
    (
        "a workload redefined in place is judged against the series it retired",
        "service/evaluation/evaluate.py",
        "redefined = redefinitions.redefined(session, run.id, previous, started, measured)",
        "redefined: dict = {}",
        "tests/service/histories/test_redefined_workload.py",
    ),
    (
        "an alert nobody can confirm closes as fixed when its series comes back",
        "service/evaluation/alerts.py",
        '        why += "; before any confirmation"',
        "        return",
        "tests/service/runs/test_imports.py::test_an_alert_nobody_can_confirm_is_closed_as_fixed_"
        "when_the_series_comes_back",
    ),
    (
        "a run's common offset, measured on its unchanged kernels, is taken out of the changes",
        "service/analysis/verdicts.py",
        "offsets = {i: o for i, o in measured.items() if o.evident}",
        "offsets: dict = {}",
        "tests/service/histories/test_run_offset.py",
    ),
    (
        "only kernels that nothing changed since their baseline measure the run's offset",
        "service/evaluation/controls.py",
        "same = all(captured.get((r, name, params_key)) == head for r in base_runs)",
        "same = True",
        "tests/service/histories/test_run_offset.py",
    ),
    (
        "an offset within its controls' own wander is not taken out",
        "service/analysis/run_offset.py",
        "return abs(self.log) > EVIDENT * math.sqrt(self.spread)",
        "return True",
        "tests/benchmarks/test_history_replay.py",
    ),
    (
        "a taken-out offset's doubt is added to the test",
        "service/analysis/verdicts.py",
        "tests[i] = wander.test(head - offset.log, base, level, offset.var, alone)",
        "tests[i] = wander.test(head - offset.log, base, level, 0.0, alone)",
        "tests/service/analysis/test_run_offset.py",
    ),
    (
        "a control's own wander is measured apart from the runs it shares with its group",
        "service/analysis/run_controls.py",
        "alone.append(level.run_var if own[i] is None else min(level.run_var, own[i]))",
        "alone.append(level.run_var)",
        "tests/benchmarks/test_history_replay.py",
    ),
    (
        "net of its run's offset, the head's run wanders only as far as the series apart",
        "service/analysis/verdicts.py",
        "tests[i] = wander.test(head - offset.log, base, level, offset.var, alone)",
        "tests[i] = wander.test(head - offset.log, base, level, offset.var)",
        "tests/service/histories/test_run_offset.py",
    ),
    (
        "a control's change is read against the runs the series it corrects is compared with",
        "service/analysis/run_controls.py",
        "if runs_of and len(seen) == len(runs_of) and set(runs_of) < set(c.baseline_runs):",
        "if False:",
        "tests/service/histories/test_run_offset.py",
    ),
    (
        "where controls measured the run, the floor is the series' wander apart from its runs",
        "service/analysis/verdicts.py",
        "if offset is None or apart is None or level.young:",
        "if True:",
        "tests/service/histories/test_run_offset.py",
    ),
    (
        "level shifts are left out of a series' wander apart from its group",
        "service/analysis/run_offset.py",
        "kept = steps[steps <= JUMP * scale]",
        "kept = steps",
        "tests/benchmarks/test_history_replay.py",
    ),
    (
        "a pending regression the next run settles opens its alert at its own commit",
        "service/evaluation/alerts.py",
        "if alert.commit_id not in line:  # a later commit's suspicion: this one came first",
        "if False:",
        "tests/service/histories/test_pending_alerts.py",
    ),
]


def run(postgres: str | None) -> int:
    rows, missed = [], 0
    for rule, path, line, broken, test in MUTATIONS:
        with tempfile.TemporaryDirectory(prefix="kw-mutation-") as tmp:
            tree = Path(tmp) / "tree"
            shutil.copytree(
                ROOT,
                tree,
                ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".kernelwatch*"),
            )
            source = tree / path
            text = source.read_text()
            if line not in text:
                raise SystemExit(f"{path} no longer holds the line of rule {rule!r}: update it")
            source.write_text(text.replace(line, broken, 1))
            env = {k: v for k, v in os.environ.items() if k != "KERNELWATCH_TEST_POSTGRES_URL"}
            if postgres:
                env["KERNELWATCH_TEST_POSTGRES_URL"] = postgres
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
        red = done.returncode != 0
        missed += not red
        tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
        rows.append(f"| {rule} | {path} | {'RED (caught)' if red else 'GREEN (missed)'} | {tail} |")
    print("| rule | broken in | test | pytest said |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="also run the tests on this PostgreSQL")
    return run(parser.parse_args(argv).postgres)


if __name__ == "__main__":
    sys.exit(main())

"""Each rule a verdict stands on, broken by one line: the test that pins it must turn red.

    python -m benchmarks.rule_mutations [--postgres URL]

For every mutation, a copy of the tree gets the one-line change and runs the test file that pins
the rule (tests/service/histories/: test_rules.py, test_step_and_fix.py, test_wander.py; the tests
of service.analysis and of the replayed H200 history); the table says whether it failed, as it
must. Exit status 1 when a broken rule went unnoticed.
"""

from __future__ import annotations

import argparse
import json
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
        "service/store/history/ancestry.py",
        "key=lambda r: (position[r[2]], -r[0])",
        "key=lambda r: (position[r[2]], r[0])",
        "tests/service/histories/test_rules.py::test_a_commit_measured_twice_is_compared_by_its_newer_run",
    ),
    (
        "two runs at a commit: the newest wins in the commit's metrics",
        "service/evaluation/reads/commit_metrics.py",
        ".order_by(Run.finished_at.desc(), Run.id.desc())",
        ".order_by(Run.finished_at.asc(), Run.id.asc())",
        "tests/service/histories/test_rules.py::test_the_newest_run_of_a_suite_and_fingerprint_wins_in_the_"
        "commit_metrics",
    ),
    (
        "one confirmation of several doubts corrects for their number",
        "service/evaluation/verdicts/confirmations.py",
        "rule.remeasure(head_samples, base_samples, rule.ALPHA / len(found))",
        "rule.remeasure(head_samples, base_samples, rule.ALPHA)",
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
        "service/evaluation/verdicts/baseline.py",
        '_SHIFT_VERDICTS = {"regressed": "regression", "improved": "improvement"}',
        "_SHIFT_VERDICTS: dict[str, str] = {}",
        "tests/service/histories/test_step_and_fix.py::test_a_step_its_innocent_successors_and_the_fix_posted_"
        "one_by_one",
    ),
    (
        "the timing method is part of a series' identity",
        "service/store/history/workload_rows.py",
        "        timing.method,\n    ]",
        "    ]",
        "tests/service/histories/test_method_series.py",
    ),
    (
        "p-values are corrected for the run's number of series (Benjamini-Hochberg)",
        "service/analysis/decision.py",
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
        "service/evaluation/verdicts/changepoints.py",
        "        if cid in position:\n            newest[sid, cid] = median",
        "        if cid in position and (sid, cid) not in newest:\n"
        "            newest[sid, cid] = median",
        "tests/service/evaluation/verdicts/test_changepoints.py::test_a_commit_measured_twice_is_its_"
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
        "service/analysis/decision.py",
        "    if not c.young:",
        "    if True:",
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
        "service/evaluation/verdicts/baseline.py",
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
        "tests/service/evaluation/verdicts/test_work_verdicts.py::test_a_few_pairs_bound_the_next_move_by_how_"
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
        "tests/service/evaluation/verdicts/test_work_verdicts.py::test_the_counters_of_what_the_caches_did_"
        "are_learning_until_shown_steady",
    ),
    (
        "a workload redefined in place is judged against the series it retired",
        "service/evaluation/verdicts/evaluate.py",
        "redefined = redefinitions.redefined(session, run.id, previous, started, measured)",
        "redefined: dict = {}",
        "tests/service/histories/test_redefined_workload.py",
    ),
    (
        "an alert nobody can confirm closes as fixed when its series comes back",
        "service/evaluation/alerts/lifecycle.py",
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
        "service/evaluation/verdicts/controls.py",
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
        "service/evaluation/alerts/lifecycle.py",
        "if alert.commit_id not in line:  # a later commit's suspicion: this one came first",
        "if False:",
        "tests/service/histories/test_pending_alerts.py::test_a_regression_that_arrives_after_its_"
        "next_commit_opens_its_alert_at_its_commit",
    ),
    # Issue 46: rules no test held (25 hand-made mutations, 15 killed), each pinned directly.
    (
        "active alerts are the run's branch's own: main's open alert does not swallow release's",
        "service/evaluation/alerts/lifecycle.py",
        "            Alert.branch == run.branch,\n",
        "",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_an_open_alert_on_main_does_not_swallow_a_"
        "regression_on_release",
    ),
    (
        "active alerts are the run's branch's own: a fix on release does not close main's alert",
        "service/evaluation/alerts/lifecycle.py",
        "            Alert.branch == run.branch,\n",
        "",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_a_fix_on_a_release_branch_cut_after_the_"
        "regression_does_not_close_mains_alert",
    ),
    (
        "an alert's attribution reads the newest run of its base commit",
        "service/evaluation/alerts/lifecycle.py",
        ".order_by(Run.id.desc())",
        ".order_by(Run.id.asc())",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_the_attribution_reads_the_newest_run_of_a_"
        "base_commit_measured_twice",
    ),
    (
        "a fix is back within the class floor of the level the alert regressed from (not twice)",
        "service/evaluation/alerts/lifecycle.py",
        "(result.median - base) / base <= class_floor(base)",
        "(result.median - base) / base <= 2 * class_floor(base)",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_a_series_is_fixed_only_once_back_within_the_"
        "class_floor_of_its_earlier_level",
    ),
    (
        "a fix is back within the class floor of the level the alert regressed from (not below)",
        "service/evaluation/alerts/lifecycle.py",
        "(result.median - base) / base <= class_floor(base)",
        "(result.median - base) / base <= 0",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_a_series_is_fixed_only_once_back_within_the_"
        "class_floor_of_its_earlier_level",
    ),
    (
        "of a commit measured twice, the newer run is the previous run of the line",
        "service/evaluation/verdicts/evaluate.py",
        "newest[commit_id] = max(run_id, newest.get(commit_id, run_id))",
        "newest[commit_id] = min(run_id, newest.get(commit_id, run_id))",
        "tests/service/evaluation/verdicts/test_work_rules.py::test_a_workload_the_newer_run_of_a_commit_"
        "measured_is_missing_from_the_next_commit",
    ),
    (
        "of a commit measured twice, the newer run is the base of the next one's work verdicts",
        "service/evaluation/verdicts/evaluate.py",
        "newest[commit_id] = max(run_id, newest.get(commit_id, run_id))",
        "newest[commit_id] = min(run_id, newest.get(commit_id, run_id))",
        "tests/service/evaluation/verdicts/test_work_rules.py::test_a_kernels_work_is_compared_with_the_"
        "newer_run_of_a_commit_measured_twice",
    ),
    (
        "a work counter's base is the previous run of the line, not an older one",
        "service/evaluation/verdicts/work_verdicts.py",
        "previous = window[0] if window else None",
        "previous = window[-1] if window else None",
        "tests/service/evaluation/verdicts/test_work_rules.py::test_a_kernels_work_is_compared_with_the_"
        "previous_run_not_an_older_one",
    ),
    (
        "ncu's launch figures are part of a kernel's determinants beside the runner's digest",
        "service/analysis/work.py",
        '    return f"{runner_key}:{launch}"',
        "    return runner_key",
        "tests/service/evaluation/verdicts/test_work_rules.py::test_one_runner_digest_launched_otherwise_is_"
        "not_the_same_determinants",
    ),
    (
        "a kernel launched on another grid is no control of the run's offset",
        "service/analysis/work.py",
        '    return f"{runner_key}:{launch}"',
        "    return runner_key",
        "tests/service/evaluation/verdicts/test_work_rules.py::test_a_kernel_launched_on_another_grid_is_no_"
        "control_of_the_runs_offset",
    ),
    (
        "a failure posted with retry is requeued only while the job has attempts left",
        "service/store/jobs/queue.py",
        "if not succeeded and retry and job.attempt < job.max_attempts:",
        "if not succeeded and retry:",
        "tests/service/store/jobs/test_queue.py::test_a_job_that_keeps_failing_with_retry_ends_failed_"
        "after_its_last_attempt",
    ),
    (
        "a webhook signature must name sha256",
        "service/api/routes/webhooks.py",
        'if algorithm != "sha256" or not _HEX_DIGEST.fullmatch(signature):',
        "if not _HEX_DIGEST.fullmatch(signature):",
        "tests/service/api/routes/test_webhooks.py::test_the_right_digest_under_another_"
        "algorithms_name_is_401",
    ),
    (
        "only application/json and application/*+json are taken as JSON",
        "service/api/body.py",
        'json_like = media.startswith("application/") and media.endswith("+json")',
        'json_like = "json" in media',
        "tests/service/api/test_body.py::test_a_media_type_that_merely_mentions_json_is_415",
    ),
    (
        "git's <transport>::<address> form is a transport whatever its name, never a path",
        "service/core/clone_urls.py",
        'if "::" in url.split("/", 1)[0]:',
        'if url.lower().startswith("ext::"):',
        "tests/service/core/test_clone_urls.py::test_any_git_transport_is_refused_even_where_"
        "local_paths_are_allowed",
    ),
    (
        "every output of a workload is judged, not only the last",
        "runner/worker/process.py",
        "for name, expected in reference.items():",
        "for name, expected in list(reference.items())[-1:]:",
        "tests/runner/worker/test_process.py::test_a_wrong_first_output_fails_the_workload_though_"
        "its_last_is_right",
    ),
    (
        "the profile-reuse key holds the host's CUDA runtime version",
        "runner/profile/reuse.py",
        '"driver_version", "cuda_runtime_version", "cupy_version",',
        '"driver_version", "cupy_version",',
        "tests/runner/profile/test_reuse.py::test_another_cuda_runtime_cupy_nvcc_or_python_"
        "version_profiles_again[cuda_runtime]",
    ),
    (
        "the profile-reuse key holds the host's CuPy version",
        "runner/profile/reuse.py",
        '"cuda_runtime_version", "cupy_version",',
        '"cuda_runtime_version",',
        "tests/runner/profile/test_reuse.py::test_another_cuda_runtime_cupy_nvcc_or_python_"
        "version_profiles_again[cupy]",
    ),
    (
        "the profile-reuse key holds the host's nvcc version",
        "runner/profile/reuse.py",
        '"nvcc_version", "ncu_version")',
        '"ncu_version")',
        "tests/runner/profile/test_reuse.py::test_another_cuda_runtime_cupy_nvcc_or_python_"
        "version_profiles_again[nvcc]",
    ),
    (
        "the profile-reuse key holds the host's Python version",
        "runner/profile/reuse.py",
        'host["python"] = (environment.get("host") or {}).get("python")',
        "pass",
        "tests/runner/profile/test_reuse.py::test_another_cuda_runtime_cupy_nvcc_or_python_"
        "version_profiles_again[python]",
    ),
    # Issue 46 item 1: one kernel's own change never moves another's verdict.
    (
        "a control apart from the others whose reading is a change of its own is left out",
        "service/analysis/run_offset.py",
        "beyond = [k for k in range(len(members)) if apart[k] > OWN_CHANGE]",
        "beyond = []",
        "tests/service/analysis/test_run_offset.py::test_a_control_whose_reading_is_a_change_of_"
        "its_own_measures_no_offset",
    ),
    (
        "a control left alone whose own reading is a change measures no offset",
        "service/analysis/run_offset.py",
        "kept[members[0]] = not changed[members[0]]",
        "kept[members[0]] = True",
        "tests/service/analysis/test_run_offset.py::test_a_control_whose_reading_is_a_change_of_"
        "its_own_measures_no_offset",
    ),
    (
        "a verdict one control's offset would flip waits for the next run",
        "service/analysis/decision.py",
        "if c.alternative is None or measured.verdict == net.verdict:",
        "if True:",
        "tests/service/analysis/test_run_offset.py::test_a_control_that_moved_on_its_own_within_"
        "its_floor_flips_nothing",
    ),
    (
        "the next run settles a verdict one control would flip: a change only where it stays",
        "service/analysis/decision.py",
        "stays = c.next_raw * moved.change > 0 and abs(c.next_raw) > moved.floor",
        "stays = True",
        "tests/service/analysis/test_run_offset.py::test_a_verdict_one_control_would_flip_waits_"
        "for_the_next_run",
    ),
    (
        "a series whose kernels did not change says its time went to the host code around them",
        "service/evaluation/verdicts/evaluate.py",
        "same_kernels=result.id in unchanged,",
        "same_kernels=False,",
        "tests/service/histories/test_own_change_no_offset.py::test_a_series_that_moved_while_its_"
        "kernels_did_not_says_where_the_time_went",
    ),
    (
        "an alert on a workload whose kernels did not change names the time between them",
        "service/evaluation/alerts/attribution.py",
        "same = base_run is not None and host_time.same_kernels(base.determinants, "
        "head.determinants)",
        "same = False",
        "tests/service/histories/test_own_change_no_offset.py::test_a_series_that_moved_while_its_"
        "kernels_did_not_says_where_the_time_went",
    ),
    # Issue 52: doubt settled by measuring at once; what the rerun finds is the verdict.
    (
        "a young level's pending slowdown is confirmed at once, its alert suspected",
        "service/evaluation/alerts/lifecycle.py",
        "doubt = doubtful(v)",
        'doubt = v.verdict == "regressed"',
        "tests/service/histories/test_doubt_confirmed.py::test_a_young_levels_slowdown_is_"
        "confirmed_at_once_and_the_rerun_is_its_verdict",
    ),
    (
        "a pull request's doubtful slowdown is confirmed against its merge base",
        "service/evaluation/verdicts/confirmations.py",
        "wanted = {v.series_id for v in verdicts if doubtful(v)}",
        "wanted = set()",
        "tests/service/histories/test_doubt_confirmed.py::test_a_pull_requests_young_slowdown_is_"
        "confirmed_against_its_merge_base",
    ),
    (
        "what the interleaved rerun found is the series' verdict at that commit",
        "service/evaluation/verdicts/evaluate.py",
        "    confirmations.settle(session, run, verdicts)",
        "    pass",
        "tests/service/histories/test_doubt_confirmed.py::test_a_slowdown_the_rerun_does_not_"
        "reproduce_is_unchanged_in_every_read",
    ),
    (
        "a run whose slowdown the rerun did not reproduce stays out of its level's baseline",
        "service/evaluation/verdicts/confirmations.py",
        'v.outlier = v.outlier or settled == "unchanged"',
        "v.outlier = v.outlier",
        "tests/service/histories/test_doubt_confirmed.py::test_a_slowdown_the_rerun_does_not_"
        "reproduce_is_unchanged_in_every_read",
    ),
    (
        "a run's own interleaved finding is kept with it, in its transaction",
        "service/runs/arrival.py",
        "            record_paired(session, outcome.pk, doc)\n            return outcome",
        "            return outcome",
        "tests/service/histories/test_doubt_measured_in_run.py::test_a_slowdown_measured_against_"
        "its_parent_is_regressed_with_an_open_alert_and_no_job",
    ),
    (
        "a runner's run job keeps its own interleaved finding too",
        "service/runs/runner_results.py",
        "                record_paired(session, outcome.pk, doc)",
        "                pass",
        "tests/service/histories/test_doubt_measured_in_run.py::test_a_runners_run_job_posting_its_"
        "paired_base_is_settled_the_same",
    ),
    (
        "an alert the run confirmed itself opens at once, with no job",
        "service/evaluation/backlog.py",
        "waiting = confirm_measured(session, run, suspected, CONFIRM_ATTEMPTS)",
        "waiting = suspected",
        "tests/service/histories/test_doubt_measured_in_run.py::test_a_slowdown_measured_against_"
        "its_parent_is_regressed_with_an_open_alert_and_no_job",
    ),
    (
        "a run's finding against another base than the verdict's settles nothing",
        "service/evaluation/verdicts/confirmations.py",
        "return bool(v.baseline_commits) and c.base_commit_id == v.baseline_commits[0]",
        "return True",
        "tests/service/histories/test_doubt_measured_in_run.py::test_a_base_the_verdict_is_not_"
        "compared_with_settles_nothing",
    ),
    (
        "processes on two levels are no slowdown unless every head process is slower",
        "service/analysis/confirmation.py",
        "slower = p <= alpha and change > floor and separated(head, base)",
        "slower = p <= alpha and change > floor",
        "tests/service/analysis/test_confirmation.py",
    ),
    (
        "a paired base of the run's own commit is refused",
        "service/schemas/document.py",
        "            if base.commit.sha == self.commit.sha:",
        "            if False:",
        "tests/service/histories/test_doubt_measured_in_run.py::test_a_paired_base_of_the_runs_"
        "own_commit_or_another_suite_is_refused",
    ),
    (
        "a doubtful launch is timed against the run's base, interleaved",
        "runner/run/doubtful.py",
        "    if base is not None:\n        against = time_against_base(",
        "    if False:\n        against = time_against_base(",
        "tests/runner/run/test_paired.py",
    ),
    (
        "a launch that changed since the last one profiled is timed against the base instead of "
        "in the suite's processes and alone in more",
        "runner/run/pipeline.py",
        "    ordered = timing_order([w for w in passing if w not in changed],",
        "    ordered = timing_order(list(passing),",
        "tests/runner/run/test_paired.py::test_a_short_launch_that_changed_is_timed_against_the_"
        "base_in_place_of_its_own_processes",
    ),
    (
        "a changed launch that no base measures is timed alone in fresh processes",
        "runner/run/doubtful.py",
        "    if untimed:\n",
        "    if False:\n",
        "tests/runner/run/test_doubtful.py::test_a_changed_launch_no_base_measures_is_timed_alone_"
        "in_fresh_processes",
    ),
    (
        "the pairs' processes are started ahead, with no CUDA context",
        "runner/run/paired.py",
        '    return WarmWorkers(suite, [("time", seed) for seed in seeds], env, context=False)',
        '    return WarmWorkers(suite, [("time", seed) for seed in seeds], env)',
        "tests/runner/run/test_doubtful.py::test_the_pairs_processes_are_started_ahead_with_no_"
        "context_and_none_is_left_waiting",
    ),
    (
        "files Inductor writes in its folder while every FX graph hits are no compile miss",
        "runner/measure/compile_caches.py",
        "            new.pop(INDUCTOR_FOLDER, None)",
        "            pass",
        "tests/runner/measure/test_compile_caches.py::test_files_inductor_writes_while_every_graph_"
        "hits_are_no_miss_but_a_compilers_are",
    ),
    (
        "a worker whose results are sent leaves without the interpreter's teardown",
        "runner/worker/ending.py",
        "    os._exit(code)",
        "    sys.exit(code)",
        "tests/runner/worker/test_ending.py",
    ),
    (
        "the workers keep Python's bytecode in the runner's cache",
        "runner/suite/bytecode.py",
        "    env = {PREFIX_ENV: str(folder(cache_dir))}",
        "    env: dict[str, str] = {}",
        "tests/runner/suite/test_bytecode.py",
    ),
    (
        "a removed worktree takes its bytecode with it",
        "runner/suite/checkout.py",
        "        forget(self.cache_dir, path)  # its workers' bytecode (runner.suite.bytecode)",
        "        pass",
        "tests/runner/suite/test_bytecode.py::test_a_runs_workers_write_their_bytecode_in_the_"
        "cache_and_its_worktree_takes_its_own_away",
    ),
    (
        "workers started ahead have warmed up before a process beside them is timed",
        "runner/measure/phase.py",
        "            while pending and (left := deadline - time.monotonic()) > 0:",
        "            while False:",
        "tests/runner/measure/test_phase.py::test_ready_returns_once_every_waiting_worker_has_"
        "warmed_up",
    ),
    (
        "a worker started ahead with no context makes none while it waits",
        "runner/worker/process.py",
        '    if config["device"] == "cuda" and context:',
        '    if config["device"] == "cuda":',
        "tests/runner/worker/test_process.py::test_a_worker_started_without_a_context_makes_none_"
        "until_its_ids_come",
    ),
    (
        "the ncu pass names the launches that changed since the last one it profiled",
        "runner/profile/capture.py",
        '                    self.relaunched[record.info["id"]] = why',
        "                    pass",
        "tests/runner/profile/test_capture.py::test_a_commit_that_changed_python_only_reuses_"
        "every_launch_with_its_signature",
    ),
    (
        "a pull request's doubtful launches are timed against its merge base",
        "runner/run/paired.py",
        '        return pull.get("merge_base") or None',
        "        pass",
        "tests/runner/run/test_paired.py::test_the_base_is_the_first_parent_or_a_pull_requests_"
        "merge_base",
    ),
    (
        "a young level's pending speed-up is confirmed at once too",
        "service/evaluation/verdicts/confirmations.py",
        "    wanted |= {v.series_id for v in verdicts if pending_improvement(v)}",
        "    pass",
        "tests/service/histories/test_doubt_confirmed.py::test_a_young_levels_speed_up_is_"
        "confirmed_at_once_too",
    ),
    (
        "a rerun that finds a pending speed-up faster makes it improved",
        "service/analysis/confirmation.py",
        '        return "improved" if verdict == "pending" else "unchanged"',
        '        return "unchanged"',
        "tests/service/histories/test_doubt_confirmed.py::test_a_young_levels_speed_up_is_"
        "confirmed_at_once_too",
    ),
    (
        "a learning cache counter says on the commit page why it is silent",
        "service/pages/templates/commit.html",
        '{% if learning %}<p class="muted work-learning">',
        '{% if false %}<p class="muted work-learning">',
        "tests/service/evaluation/verdicts/test_work_verdicts.py",
    ),
    # Issue 47 item 2: the cause in the author's terms.
    (
        "an alert names a change of the kernels a launch ran first (a graph break)",
        "service/evaluation/alerts/attribution.py",
        "moved_set = kernel_set_change(*sets, *(s.dram_bytes() for s in (base, head)))",
        "moved_set = None",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_a_graph_break_is_named_first_in_the_alert",
    ),
    # Issue 49: nothing stored other than it was sent.
    (
        "a kernel named twice in a run's build, ncu captures or timeline is a 422",
        "service/schemas/document.py",
        "        if item.kernel in seen:",
        "        if False:",
        "tests/service/schemas/test_stored_as_sent.py",
    ),
    (
        "an integer beyond 64 bits in a document is a 422, not another number",
        "service/api/body.py",
        "if _LONG_INTEGER.search(body) and (wide := unstorable_number(parse_json(body))):",
        "if False:",
        "tests/service/schemas/test_stored_as_sent.py::test_an_integer_beyond_64_bits_is_422_not_"
        "another_number",
    ),
    (
        "a sample that underflows to zero in microseconds is a 422",
        "service/store/history/workload_rows.py",
        "        if (samples <= 0).any():",
        "        if False:",
        "tests/service/schemas/test_stored_as_sent.py::test_a_sample_that_underflows_to_zero_in_"
        "microseconds_is_422",
    ),
    (
        "NaN in a request body is a 422, not stored as null",
        "service/schemas/text.py",
        "        if found := non_finite(data):",
        "        if found := None:",
        "tests/service/schemas/test_stored_as_sent.py::test_a_runners_environment_holding_nan_is_"
        "422_not_null",
    ),
    (
        "a route whose body is a few fields takes kilobytes (413, unread)",
        "service/api/app.py",
        "    app.add_middleware(SmallBodies)\n",
        "",
        "tests/service/api/test_small_bodies.py::test_a_registration_larger_than_its_route_takes_"
        "is_413_unread",
    ),
    (
        "a body's deadline is bounded whatever its declared length",
        "service/web/connections.py",
        "    return min(wanted, _number(BODY_DEADLINE_ENV, BODY_DEADLINE_SECONDS))",
        "    return wanted",
        "tests/service/api/test_small_bodies.py::test_a_body_deadline_is_bounded_whatever_its_"
        "declared_length",
    ),
    (
        "a request answered before its body is in has its connection closed at once",
        "service/web/connections.py",
        "        if self._waiting_for_request and not self.transport.is_closing():",
        "        if False:",
        "tests/service/api/test_small_bodies.py::test_a_request_refused_before_its_body_is_in_"
        "has_its_connection_closed",
    ),
    (
        "a runner's environment nested too deep is a 422, not a 500",
        "service/schemas/jobs.py",
        "            if depth > MAX_ENVIRONMENT_DEPTH:",
        "            if False:",
        "tests/service/schemas/test_stored_as_sent.py::test_a_runners_environment_nested_hundreds_deep_"
        "is_422",
    ),
    (
        "a repository name has no segment '.' or '..'",
        "service/schemas/names.py",
        'if any(segment in (".", "..") for segment in name.split("/")):',
        "if False:",
        "tests/service/schemas/test_names.py",
    ),
    (
        "a push to a branch no result document could carry is refused",
        "service/integrations/github/events.py",
        "if (why := branch_refusal(branch)) is not None:",
        "if False:",
        "tests/service/schemas/test_names.py",
    ),
    # Issue 46 item 2: a redefined workload in a push is bisected by whichever definition.
    (
        "a bisection measures each commit under whichever definition it carries",
        "service/evaluation/alerts/bisect.py",
        "definitions = _definitions(session, alert, series)",
        "definitions = (series,)",
        "tests/service/histories/test_redefined_workload.py::test_a_redefinition_inside_a_push_of_"
        "three_commits_is_bisected_to_its_commit",
    ),
    # Trust (issue 46's standard): a small slowdown, or a loaded host's noise, in a pushed commit
    # is not blamed for a much larger regression found at the head.
    (
        "a bisected commit is bad only where it brings half the regression",
        "service/evaluation/alerts/bisect.py",
        "    return regression is None or level >= regression / 2",
        "    return True",
        "tests/service/evaluation/alerts/test_bisect.py::test_a_small_slowdown_under_a_large_"
        "regression_is_not_its_first_bad_commit",
    ),
    (
        "a bisection counts a partial step's level from the base for the commits after it",
        "service/evaluation/alerts/bisect.py",
        '                state["good_level"] = level',
        "                pass",
        "tests/service/evaluation/alerts/test_bisect.py::test_a_regression_in_two_steps_is_"
        "bisected_to_the_step_that_crosses_half",
    ),
    # Issue 47 item 3 on the GPU: a prepare time compares only with one timed alike (the doubt
    # history's innocent commit regressed +36% against its parent's pairs).
    (
        "a prepare time is judged on the suite's levels, a paired one against its base",
        "service/evaluation/verdicts/measure_verdicts.py",
        '            if measure == "prepare_seconds":  # compared only where timed alike',
        "            if False:",
        "tests/service/evaluation/verdicts/test_measure_verdicts.py::test_a_prepare_time_timed_"
        "in_pairs_is_judged_against_its_base_and_carries_the_line",
    ),
    (
        "a workload's prepare time is its suite processes' median where it had any",
        "service/store/history/workload_rows.py",
        '    kind = next((k for k in PROCESS_KINDS if k in kinds), "suite")',
        '    kind = sorted(kinds)[0] if kinds else "suite"',
        "tests/service/store/history/test_workload_rows.py",
    ),
    (
        "a timing process says its kind in the document",
        "runner/run/report.py",
        '("prepare_seconds", "peak_memory_bytes", "process")',
        '("prepare_seconds", "peak_memory_bytes")',
        "tests/runner/run/test_short_processes.py",
    ),
    # Issue 47 item 2: the compiler's knob the author turned, named first.
    (
        "a change of a kernel's compiled knobs is named first in the alert",
        "service/evaluation/alerts/attribution_text.py",
        "    lead += [knobs.describe(turned)] if turned else []",
        "    lead += []",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_the_compilers_knob_the_author_"
        "turned_is_named_first",
    ),
    (
        "a kernel ptxas reported leaves its registers and shared memory to that report",
        "service/analysis/knobs.py",
        "        skip = PTXAS_FACTS if kernel in ptxas else ()",
        "        skip = ()",
        "tests/service/analysis/test_knobs.py",
    ),
    (
        "a compiled fact one side does not know is no change",
        "service/analysis/knobs.py",
        "        if b is None or h is None or b == h",
        "        if b == h",
        "tests/service/analysis/test_knobs.py",
    ),
    # Issue 47 item 1: a reference kept only while what determines it is the same.
    (
        "a kept reference is keyed by the functions of the suite it calls",
        "runner/worker/references.py",
        "                        follow(attr, vars(value)[attr], depth + 1, names)",
        "                        pass",
        "tests/runner/worker/test_references.py",
    ),
    (
        "a kept reference is keyed by the inputs the instance holds",
        "runner/worker/references.py",
        '"code": code_digest(method, instance, root), "arrays": prints,',
        '"code": code_digest(method, instance, root),',
        "tests/runner/worker/test_references.py",
    ),
    # Issue 50 items 1 and 5: one story at a commit and at its edges.
    (
        "the commit a trend's marker names is labelled on the axis",
        "dashboards/trend.py",
        "        keep = {i for sha in marked if (i := self.index.get(sha)) is not None}",
        "        keep = set()",
        "tests/dashboards/test_trend.py",
    ),
    (
        "a counter that moved from zero is new, not +100%",
        "service/evaluation/alerts/attribution.py",
        "(0.0 if after == before else None)",
        "(0.0 if after == before else 1.0)",
        "tests/service/analysis/test_causes.py",
    ),
    (
        "a comparison's significant change is beyond its class floor too",
        "service/evaluation/reads/compare.py",
        "significant=bool(q <= Q) and abs(change) >= floor,",
        "significant=bool(q <= Q),",
        "tests/service/evaluation/alerts/test_lifecycle.py::test_a_change_within_its_class_floor_is_"
        "not_significant_in_a_comparison",
    ),
    (
        "a bisected commit's metrics name the alert it started",
        "service/evaluation/reads/commit_alerts.py",
        "    found = alerts_at_commit(session, commit.id)",
        "    found = []",
        "tests/service/evaluation/alerts/test_bisect.py::test_every_page_shows_the_regression_at_"
        "the_first_bad_commit",
    ),
    (
        "a kept reference is keyed by the code of the objects of the suite it calls",
        "runner/worker/references.py",
        "        elif _own(type(value).__module__, root):  # an object of the suite's own class\n"
        "            classes(type(value), depth)",
        "        elif _own(type(value).__module__, root):  # an object of the suite's own class\n"
        "            pass",
        "tests/runner/worker/test_references.py",
    ),
    # Issue 47 item 3: prepare time, peak memory and numeric error judged run against run.
    (
        "a run's measures beside its duration are judged when it is analysed",
        "service/evaluation/verdicts/evaluate.py",
        "    judge_measures(session, run.id, line)\n",
        "",
        "tests/service/evaluation/verdicts/test_measure_verdicts.py",
    ),
    (
        "a regressed measure opens an alert when its run is analysed",
        "service/evaluation/backlog.py",
        "        update_measure_alerts(session, run)\n",
        "",
        "tests/service/evaluation/verdicts/test_measure_verdicts.py",
    ),
    (
        "a measure's alert is fixed by the run that brings it back",
        "service/evaluation/alerts/measure_alerts.py",
        "            fixed_in_line(session, active, run, why)",
        "            pass",
        "tests/service/evaluation/verdicts/test_measure_verdicts.py",
    ),
    (
        "a late ancestor's measure regression opens its own alert, not hidden by a descendant's",
        "service/evaluation/alerts/measure_alerts.py",
        "            if active.commit_id not in line:",
        "            if False:",
        "tests/service/evaluation/alerts/test_measure_alerts.py",
    ),
    (
        "one real step of a measure does not widen its tolerance for the runs after it",
        "service/analysis/measures.py",
        "    return sorted(steps)[-2] if len(steps) >= 3 else 0.0",
        "    return max(steps, default=0.0)",
        "tests/service/analysis/test_measures.py",
    ),
    (
        "a numeric error is read on a log scale with a floor",
        "service/analysis/measures.py",
        "        ratio = max(value, rule.absolute) / max(base, rule.absolute)",
        "        ratio = value / base",
        "tests/service/analysis/test_measures.py",
    ),
    (
        "a measure's change counts only beyond its absolute floor too",
        "service/analysis/measures.py",
        "        moved = abs(change) > tolerance and abs(value - base) > rule.absolute",
        "        moved = abs(change) > tolerance",
        "tests/service/analysis/test_measures.py",
    ),
    (
        "runner_cost: a Python source's edit is a change of the kernels whose code it moved",
        "benchmarks/runner_cost.py",
        "        if not names & {ANY_KERNEL, SOURCE_EDIT}:",
        "        if ANY_KERNEL not in names:",
        "tests/benchmarks/test_runner_cost.py::test_a_python_edit_counts_as_a_change_of_the_"
        "kernels_whose_code_it_moved",
    ),
]


def run(postgres: str | None, mutations: list | None = None) -> int:
    rows, missed = [], 0
    for rule, path, line, broken, test in MUTATIONS if mutations is None else mutations:
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
            # The worker processes a test starts import the copy too, not the installed tree.
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
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
        # Only failed tests are a caught mutation: a copy that does not even collect (pytest's
        # status 2-5) says nothing of the rule.
        red = done.returncode == 1
        missed += not red
        tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
        said = "RED (caught)" if red else "GREEN (missed)" if done.returncode == 0 else "ERROR"
        rows.append(f"| {rule} | {path} | {said} | {tail} |")
    print("| rule | broken in | test | pytest said |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="also run the tests on this PostgreSQL")
    parser.add_argument(
        "--only",
        metavar="FILE",
        help="run only the mutations of this JSON file (a list of [rule, file, line, broken, "
        "test]), e.g. to try a new one before it joins MUTATIONS",
    )
    args = parser.parse_args(argv)
    only = json.loads(Path(args.only).read_text()) if args.only else None
    return run(args.postgres, only)


if __name__ == "__main__":
    sys.exit(main())

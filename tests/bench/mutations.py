"""Remove each protection of the verdict rules in turn and show which test kills the change.

For every mutation: copy the checkout (tracked and untracked files, no virtualenv) to a
temporary folder, replace one exact snippet in one file, run the named tests there, and
record whether they failed (killed) or passed (survived: a protection no test holds).
A mutation whose snippet is not found is reported as stale, never as killed.

The tests run under a throwaway virtualenv in which the copy is installed editable: the
checkout's own install maps campaign.worker, campaign.plugins and campaign.reaccount
(pyproject's package-dir) to the checkout, so a copy run under it would test a mutation of
worker/, plugins/ or reaccount/ against unmutated code, in every process not started from
the copy's folder. The throwaway one sees the checkout's environment's packages (torch,
triton, pytest) through a path file, never its editable finder.

    .venv/bin/python tests/bench/mutations.py [--only SUBSTRING]

Not a test: its printed table is committed beside it (mutations.md).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IGNORED = {".venv", ".git", ".whl", ".fg", "runs", "__pycache__", "build"}

# (protection, file, snippet, replacement, tests that must fail)
MUTATIONS = [
    ("F: failed rows compared per shape", "campaign/judging/classrules.py",
     'failed = w.row_failures.get(cell, [])', 'failed = []',
     "tests/judging/test_verdict_integrity.py"),
    ("X: IR that differs between rounds", "campaign/judging/classrules.py",
     "    if w.unstable:\n", "    if False:\n", "tests/judging/test_classify_guards.py"),
    ("X: baseline crash", "campaign/judging/classrules.py",
     '    if crashed["baseline"]:\n', '    if False:\n', "tests/judging/test_classify_guards.py"),
    ("X: baseline fails correctness", "campaign/judging/classrules.py",
     '    if w.failing_nodes["baseline"]:\n', '    if False:\n', "tests/judging/test_classify_guards.py"),
    ("F: correctness compared per node", "campaign/judging/classrules.py",
     'own = sorted(w.failing_nodes[cell] - w.failing_nodes["baseline"])',
     'own = [] if w.failing_nodes["baseline"] else sorted(w.failing_nodes[cell])',
     "tests/judging/test_verdict_integrity.py"),
    ("X: no correctness evidence", "campaign/judging/classrules.py",
     '    if empty:\n', '    if False:\n', "tests/judging/test_classify_guards.py"),
    ("X: correctness not run (GPU)", "campaign/judging/classrules.py",
     '    if not_run:\n        return "X", f"correctness not run', '    if False:\n        return "X", f"correctness not run',
     "tests/judging/test_classify_guards.py"),
    ("X: IR changed but no timed rows", "campaign/judging/classrules.py",
     "    if timing is None or not timing.rounds:\n", "    if False:\n", "tests/judging/test_classify_guards.py"),
    ("X: preflight failed", "campaign/judging/classrules.py",
     "    if preflight:\n", "    if False:\n", "tests/judging/test_classify_guards.py"),
    ("X: unreadable artifact", "campaign/judging/classrules.py",
     "    if broken:\n", "    if False:\n", "tests/judging/test_classify_guards.py"),
    ("G/R: both orders (order verdicts)", "campaign/judging/direction.py",
     "    against = [o for o in ORDERS if order_verdicts.get(o) != leaning]",
     "    against = []", "tests/judging/test_classify_guards.py"),
    ("direction: >= 2 rounds in each order", "campaign/judging/direction.py",
     "    short = [o for o in ORDERS if counts.get(o, 0) < significance.MIN_ROUNDS_PER_ORDER]",
     "    short = []", "tests/judging/test_stats.py tests/judging/test_verdict_integrity.py"),
    ("direction: pooled t-test p < 0.1 %", "campaign/judging/direction.py",
     "    if p is None or p >= significance.WORKLOAD_ALPHA:", "    if False:", "tests/judging/test_stats.py"),
    ("campaign: Holm's family is every timed workload, not only claimers", "campaign/judging/classify.py",
     "    tested = {n: p for n, p in claims.items() if p is not None}",
     '    tested = {n: p for n, p in claims.items() if p is not None and workloads[n].rests_on_timing}',
     "tests/judging/test_verdict_integrity.py"),
    ("direction: more shapes for it than against it (<=)", "campaign/judging/direction.py",
     "    if shape_counts[leaning] <= shape_counts[opposite]:", "    if shape_counts[leaning] < shape_counts[opposite]:",
     "tests/judging/test_stats.py"),
    ("t-interval: n - 1 degrees of freedom", "campaign/judging/direction.py",
     "    t = _T95[max(k for k in _T95 if k <= n - 1)]", "    t = _T95[max(k for k in _T95 if k <= n)]",
     "tests/judging/test_stats.py"),
    ("campaign: Holm step-down", "campaign/judging/classify.py",
     "        if not w.rests_on_timing or ok:\n", "        if True:\n", "tests/judging/test_verdict_integrity.py"),
    ("X: IR equal but timing moved", "campaign/judging/classrules.py",
     "    if timing is None or timing.verdict == direction.NEUTRAL:\n        bound =", "    if True:\n        bound =",
     "tests/judging/test_verdict_integrity.py"),
    ("identical code never faster/slower in an order", "campaign/judging/classify.py",
     "    if label != NOISE_FLOOR:\n", "    if True:\n", "tests/judging/test_verdict_integrity.py"),
    ("X: dropped pairs (sides timed differently)", "campaign/judging/classrules.py",
     "    if t.mixed_pairs:\n        return (f", "    if False:\n        return (f", "tests/judging/test_verdict_integrity.py"),
    ("X: coverage below 90 %", "campaign/judging/classrules.py",
     "    if coverage is not None and coverage < COVERAGE_MIN:", "    if False:", "tests/judging/test_verdict_integrity.py"),
    ("X: coverage names the shapes missing on the candidate side", "campaign/judging/stats.py",
     "        candidate_missing |= set(base) - set(cand)\n", "", "tests/judging/test_verdict_integrity.py"),
    ("tuner cache at start unknown is a taint, not clean", "campaign/judging/workload.py",
     "    if at_start is None:\n        return (f", "    if False:\n        return (f", "tests/judging/test_verdict_integrity.py"),
    ("no G/R on a warm isolated tuner cache or harness drift", "campaign/judging/classrules.py",
     '    if w.taints and (klass in ("G", "R") or on_timing):', "    if False:", "tests/judging/test_verdict_integrity.py"),
    ("control stands in for a recording-only baseline", "campaign/judging/workload.py",
     '        if "baseline" in self.tuned_only and self.ir_task.get("control") is not None:', "        if False:",
     "tests/judging/test_verdict_integrity.py"),
    ("control checked against the recording variants", "campaign/judging/workload.py",
     "            return True if set(self.ir_task[\"control\"].variants) <= recorded else None",
     "            return True", "tests/judging/test_verdict_integrity.py"),
    ("recording round timed against the control", "campaign/judging/workload.py",
     '                references[t.task.round] = "control"', "                pass", "tests/judging/test_verdict_integrity.py"),
    ("X: an environmental throttle not cleared by re-timing", "campaign/judging/classrules.py",
     "    if w.environmental:\n        return \"X\", (f\"environmental throttle while timed",
     "    if False:\n        return \"X\", (f\"environmental throttle while timed",
     "tests/judging/test_verdict_integrity.py::test_an_environmental_throttle_not_cleared_is_x_and_clocks_are_shown_per_side"),
    ("IR unchanged: the throttle guard on a moved timing", "campaign/judging/classrules.py",
     "    if w.environmental:\n        return \"X\", (f\"IR equal at {stage}, timing moved under",
     "    if False:\n        return \"X\", (f\"IR equal at {stage}, timing moved under",
     "tests/judging/test_verdict_integrity.py::test_equal_ir_with_timing_moved_under_an_environmental_throttle_says_so"),
    ("a direction at a clock fact must hold in cycles", "campaign/judging/classrules.py",
     "    if on_timing and w.capped:\n", "    if False:\n",
     "tests/judging/test_verdict_integrity.py::test_a_gap_the_clock_difference_explains_is_x_with_both_figures"),
    ("cycles must lean the way time moved", "campaign/judging/clockrule.py",
     "    if cyc.leaning != timing.verdict:\n", "    if False:\n",
     "tests/judging/test_verdict_integrity.py::test_a_gap_the_clock_difference_explains_is_x_with_both_figures"),
    ("the band is symmetric in log ratio", "campaign/judging/direction.py",
     "    if iv.high < 1 / (1 + floor) - 1:\n", "    if iv.high < -floor:\n", "tests/judging/test_mirror.py"),
    ("G on a speedup whatever the topology did", "campaign/judging/classrules.py",
     '        klass = "G" if timing.verdict == direction.FASTER else "R"\n',
     '        klass = "G" if timing.verdict == direction.FASTER and scoped[1] < scoped[0] else "R"\n',
     "tests/judging/test_mirror.py tests/judging/test_classify.py"),
    ("the power cap is a clock fact, not environmental", "campaign/contract/clockreasons.py",
     "CLOCK_FACTS = frozenset({POWER_CAP, CLOCK_LOW})", "CLOCK_FACTS = frozenset({CLOCK_LOW})",
     "tests/judging/test_verdict_integrity.py::test_the_power_cap_on_every_side_keeps_a_direction_its_cycles_confirm"),
    ("the worker re-times a row on an environmental reason", "plugins/timingclock.py",
     "        if cause is None:\n            break\n", "        if True:\n            break\n",
     "tests/plugins/test_timing_clocks.py"),
    ("X: a floor that excludes every variant", "campaign/judging/classrules.py",
     "    if unscoped:\n        return (f\"floor", "    if False:\n        return (f\"floor", "tests/judging/test_verdict_integrity.py"),
    ("plugins/ tested as copied: run identity counts the tuner cache at start", "plugins/run_identity.py",
     '"tuner_cache_at_start": _folder_size(Path(plan.tuner_cache_dir)),', '"tuner_cache_at_start": {"files": 0, "bytes": 0},',
     "tests/plugins/test_run_identity.py::test_a_shared_tuner_cache_is_named_and_its_warm_start_counted"),
    ("screen -> campaign: the emitted manifest pins the screen root", "campaign/flows/screen.py",
     "screenroot.emitted_manifest(root, rows, pinned_to(root))", "screenroot.emitted_manifest(root, rows)",
     "tests/flows/test_screen.py::test_the_emitted_manifest_replays_the_configs_the_screen_timed"),
    ("pinning a screen root replays round 1, not the IR pass", "campaign/planning/pinning.py",
     "    preferred = [t for t in recorders if t.round != IR_ROUND] or recorders", "    preferred = recorders",
     "tests/planning/test_pinned_configs.py::test_a_screen_root_hands_on_round_1s_recording_not_the_ir_pass_first_config"),
    ("isolated tuner cache: one folder per cell", "campaign/running/runner.py",
     'tuner_cache = setup.scratch / ("tuner-shared" if tuner_mode == "shared" else f"tuner-{task.order}")\n'
     '        for folder in (triton_cache, tuner_cache):\n'
     '            folder.mkdir(parents=True, exist_ok=folder == tuner_cache and tuner_mode == "shared")',
     'tuner_cache = setup.scratch / "tuner-shared"\n'
     '        for folder in (triton_cache, tuner_cache):\n'
     '            folder.mkdir(parents=True, exist_ok=folder == tuner_cache)',
     "tests/running/test_runner_faults.py::test_faults_are_rows_and_the_campaign_goes_on"),
    ("verify: files under ir/ are hashed", "campaign/sealing/rootfiles.py",
     "            if rel in leave_out:\n                continue",
     "            if rel in leave_out or entry.name == \"ir\":\n                continue",
     "tests/sealing/test_seal_verify.py"),
    ("report: a sealed root is verified first", "campaign/commands/report.py",
     "    verified = receipt.require_verified(root, PREFIX) if receipt.is_sealed(root) else None",
     "    verified = receipt.verified(root) if False else None",
     "tests/reporting/test_report_verify.py"),
    ("autotune: correctness replays the correctness session's recording too", "plugins/autotune.py",
     "    return (replay_file, replay_file.parent / AUTOTUNE_CORRECTNESS_FILE)", "    return (replay_file,)",
     "tests/worker/test_autotune_sessions.py::test_replaying_cell_runs_correctness_on_the_recorded_configs_and_tunes_nothing"),
    ("autotune: a first-config cell replaying measured winners holds their code alone", "plugins/autotune.py",
     '        if self.policy == "first-config" and not (recorded is not None and self.replayed == "measured"):',
     '        if self.policy == "first-config":',
     "tests/judging/test_autotune.py::test_a_first_config_cell_replaying_measured_winners_holds_those_winners_code_alone"),
    ("autotune: a first-config cell compiles every config for the IR evidence", "plugins/warmup.py",
     "    return warm(tuner, configs, args, kwargs, workers)", "    return warm(tuner, configs[:1], args, kwargs, workers)",
     "tests/judging/test_autotune.py::test_first_config_cells_hold_every_configs_code_so_a_switch_past_the_first_config_is_a_change"),
    ("per-shape floors: A/A over every round", "campaign/judging/direction.py",
     "    if not has_control or not aa or len(aa) < needed:", "    if not has_control or not aa:",
     "tests/judging/test_stats.py"),
    ("A/A floor: the 80th percentile past 4 rounds, not the largest", "campaign/judging/direction.py",
     "    return math.exp(distances[floor_rank(len(distances)) - 1]) - 1\n", "    return math.exp(distances[-1]) - 1\n",
     "tests/judging/test_floor.py"),
    ("adaptive rounds: p read at the look's alpha share", "campaign/judging/stopping.py",
     "min(1.0, p / part)", "min(1.0, p)", "tests/judging/test_stopping.py"),
    ("adaptive rounds: neutral only inside the A/A floor", "campaign/judging/stopping.py",
     "    if iv.low > 1 / (1 + floor) - 1 and iv.high < floor:\n", "    if True:\n",
     "tests/judging/test_stopping.py"),
    ("seal: evidence edited after its cell ended (journal)", "campaign/sealing/receipt.py",
     "    edited = verification.journal_differences(root)\n", "    edited = []\n",
     "tests/sealing/test_seal_journal.py"),
    ("cell env: an undeclared variable refused", "campaign/contract/cellenv_rules.py",
     "            elif name != switch_name and name not in also:\n", "            elif False:\n",
     "tests/contract/test_cell_env_rules.py"),
    ("noise target: a row stopped at the cap is marked", "campaign/contract/timers.py",
     "        return Noise(len(values), spread, True)\n", "        return Noise(len(values), spread, False)\n",
     "tests/plugins/test_noise_target.py"),
    ("queue: a process claims each workload as it comes to it, not its side's share up front", "worker/batch.py",
     "    taken = 0\n",
     "    yield from [t for t in record.tasks if claim(Path(record.queue), t, record.id)]\n    return\n    taken = 0\n",
     "tests/running/test_sidequeue.py::test_a_slow_and_a_hung_workload_hold_up_no_other_and_nothing_runs_twice"),
    ("queue: a first death by a signal gives its workload back", "campaign/running/sidequeue.py",
     "                    claim_file(self.folder, task.id).unlink()\n", "                    pass\n",
     "tests/running/test_sidequeue.py::test_a_first_death_by_a_signal_goes_back_to_the_queue_and_runs_once_more"),
    ("shared root: the seal refuses a finished cell whose folder is missing", "campaign/sealing/receipt.py",
     "    missing = missing_cell_folders(root)\n    if missing:\n", "    missing = missing_cell_folders(root)\n    if False:\n",
     "tests/sealing/test_seal_crash.py::test_a_finished_cell_folder_missing_refuses_the_seal_by_name"),
    ("shared root: report --plot says a compile-only backend times nothing", "campaign/reporting/report.py",
     '("a compile-only backend times nothing" if not platform(verdicts.backend).executes else',
     '("a compile-only backend times nothing" if False else',
     "tests/flows/test_exit_codes.py::test_exit_code[0]"),
    ("shared root: a sealed folder is read-only", "campaign/sealing/rootfiles.py",
     "SEALED_FOLDER_MODE = 0o555", "SEALED_FOLDER_MODE = 0o755",
     "tests/sealing/test_seal_verify.py::test_run_seals_and_verify_names_every_difference"),
    ("shared screen: --time-unchanged runs round 1 where the IR pass found no change", "campaign/running/rounds.py",
     "            if matrix.time_unchanged or not any(", "            if not any(",
     "tests/flows/test_screen_irpass.py::test_time_unchanged_times_every_round_1_and_keeps_the_table_of_a_screen_without_ir_pass"),
    ("shared screen: the review page counts HGMMA in a real root's SASS", "campaign/judging/ircounts.py",
     '"HMMA", "HGMMA", "IMMA"', '"HMMA", "IMMA"',
     "tests/reporting/test_report_page.py::test_a_real_root_shows_wgmma_to_mma_v2_and_hgmma_to_hmma_for_matmul_only"),
    ("shared screen: a stage button hides the other stages of a real page", "campaign/reporting/page.py",
     "t.hidden=t.dataset.stage!==stage;", "t.hidden=false;",
     "tests/reporting/test_report_page.py::test_the_real_page_renders_and_switches_stage_in_chromium"),
    ("shared screen: a cell's env wins over the pinned one (sass screen of add)", "campaign/running/cellenv.py",
     "    env.update(plan.task.env)\n    return env\n", "    env.update(plan.task.env)\n    env.update(plan.pinned_env)\n    return env\n",
     "tests/plugins/test_sass_cpu.py::test_screen_at_sass_end_to_end"),
    ("shared screen: screen --format json names its table", "campaign/commands/screen.py",
     "table=str(out / screenroot.SCREEN_FILE),", "table=str(out),",
     "tests/contract/test_json_forms.py::test_screen_prints_its_table_and_nothing_else"),
    ("shared screen: cost --format json marks the IR-pass cells", "campaign/commands/cost.py",
     'ir_pass=line.scope == "cell" and line.name in ir_pass,', "ir_pass=False,",
     "tests/contract/test_json_forms.py::test_cost_json_holds_the_lines_of_the_table"),
    ("shared screen: the embedded PTX is dropped from SASS (fusion off, add alone)", "campaign/contract/sasstext.py",
     '_SASS_DEBUG_SECTION = re.compile(r"^\.(nv_)?debug")', '_SASS_DEBUG_SECTION = re.compile(r"^\.debug")',
     "tests/plugins/test_sass_cpu.py::test_fp_fusion_off_changes_the_add_ptx_but_not_its_machine_code"),
    ("shared screen: a failed disassembly leaves its marker (add alone)", "plugins/ir_capture.py",
     '(self.ir_dir / (ir_file_name(hash_, kernel, "sass") + FAILED_SUFFIX)).write_text(why + "\\n", encoding="utf-8")',
     "pass",
     "tests/plugins/test_sass_cpu.py::test_a_disassembly_that_fails_leaves_a_marker_and_the_cell_is_evidence_missing"),
    ("shared screen: the hip family's stages, amdgcn captured (no canary)", "campaign/contract/platforms.py",
     'stages=("ttir", "ttgir", "llir", "amdgcn"), disassembly=None),', 'stages=("ttir", "ttgir", "llir"), disassembly=None),',
     "tests/flows/test_screen_gfx942.py"),
    ("shared screen: do_bench calls numbered in order per node (batched)", "plugins/dobench.py",
     "        self.calls[item.nodeid] = index + 1\n", "        self.calls[item.nodeid] = index\n",
     "tests/plugins/test_dobench.py::test_each_do_bench_call_is_a_compiled_row_keyed_by_node_id_and_call_order"),
    ("shared screen: a file that times nothing says so (batched)", "plugins/dobench.py",
     '            self.ctx.log.line(f"dobench: {NOTHING_TIMED}")\n', "            pass\n",
     "tests/plugins/test_dobench.py::test_a_file_that_times_nothing_is_no_rows_with_that_reason"),
    ("only installed packages' bytecode seeded from the store", "campaign/running/bytecode.py",
     "if name.endswith(PYC) and reusable(_resolved_source(source_folder, name))]", "if name.endswith(PYC)]",
     "tests/running/test_planted_code.py tests/running/test_bytecode.py"),
    ("bytecode seeding: an installed file linked into the harness is resolved", "campaign/running/bytecode.py",
     "return source.resolve() if source.is_symlink() else source", "return source",
     "tests/running/test_bytecode.py"),
    ("bytecode seeding: an installed folder linked into the harness is resolved", "campaign/running/bytecode.py",
     'source_folder = (Path("/") / relative).resolve()', 'source_folder = Path("/") / relative',
     "tests/running/test_bytecode.py"),
    ("bytecode keep: a stale stored file is replaced", "campaign/running/bytecode.py",
     " or _header(pyc) == _header(target))", " or True)", "tests/running/test_bytecode.py"),
    ("bytecode keep: a stored file of the same header is left as it is", "campaign/running/bytecode.py",
     " or _header(pyc) == _header(target))", " or False)", "tests/running/test_bytecode.py"),
    # the runner's tests on cheaper runs (a run shared by two tests, workloads that compile nothing): still caught
    ("cheaper run: a compile-only handle is handed out once a process, not once a workload", "plugins/compile_only.py",
     "        self._handles = HANDLES\n", "        self._handles = itertools.count(0x1000)\n",
     "tests/running/test_batching.py::test_a_kernel_loaded_before_another_workloads_joins_its_launches_to_itself_not_to_the_other"),
    ("cheaper run: a later workload holds the unlaunched configs an earlier one compiled", "plugins/ir_capture.py",
     "        if kernel.hash not in self.variants:\n", "        if False:\n",
     "tests/running/test_batching.py::test_a_kernel_compiled_by_an_earlier_workload_of_the_process_is_in_the_later_ones_evidence"),
    ("cheaper run: the rest of a batch after a hang runs in a process that continues it", "campaign/running/batch.py",
     "continues=self.previous, bound=limit", "continues=None, bound=limit",
     "tests/running/test_batching.py::test_a_hang_in_the_middle_of_a_batch_is_its_own_row_and_a_fresh_process_finishes_the_rest"),
    ("cheaper run: a stop inside a batch gives its running workload an interrupted row", "campaign/running/batch.py",
     "                self.close(current, Ended(status.RC_INTERRUPTED, status.INTERRUPTED, notes))\n", "                pass\n",
     "tests/running/test_batching.py::test_a_batch_interrupted_midway_resumes_without_running_its_finished_workloads_again"),
    ("cheaper run: a stop between two workloads says the next one had not started", "campaign/running/batch.py",
     "                if current.id not in self.progress.started:\n", "                if False:\n",
     "tests/running/test_watch.py::test_a_stop_between_two_workloads_of_a_batch_ends_the_process_at_once_and_keeps_the_finished_one"),
    ("cheaper run: a stop after a batch's last workload ended ends the process, every row kept",
     "campaign/running/batch.py", "            if current is None:\n", "            if False:\n",
     "tests/running/test_watch.py::test_a_stop_after_the_last_workload_of_a_batch_ends_the_process_that_has_not_exited"),
    ("cheaper run: a process outliving its last workload's timeout leaves that workload's row", "campaign/running/batch.py",
     "            if late.id not in self.closed:\n", "            if True:\n",
     "tests/running/test_watch.py::test_a_batch_process_that_outlives_its_last_workloads_timeout_is_ended_and_the_rows_stand"),
    ("cheaper run: adaptive rounds run round 2 where the IR changed (matmul at float16)", "campaign/running/rounds.py",
     "        if change.state == irevidence.EQUAL:\n", "        if True:\n",
     "tests/running/test_runner_rounds.py::test_later_rounds_only_where_the_ir_changed"),
    ("cheaper run: a screen calls matmul's float16 IR changed", "campaign/judging/screening.py",
     "    if change.state == irevidence.EQUAL:\n        return Verdict(NO_IR_DIFF",
     "    if True:\n        return Verdict(NO_IR_DIFF",
     "tests/running/test_irlanes.py::test_a_screen_stopped_inside_its_lanes_resumes_them_and_a_hung_lane_gets_its_own_row"),
    ("cheaper run: a killed run's unfinished cell of a batch is kept aside on resume", "campaign/running/batch.py",
     "                moved = set_aside(folder)\n", "                moved = folder\n                shutil.rmtree(folder)\n",
     "tests/running/test_runner_resume.py::test_runner_killed_mid_cell_then_run_again_completes"),
    ("cheaper run: a resumed screen runs no finished canary again", "campaign/running/runner.py",
     "        task = group[0]\n        latest = status.settled(rows)\n",
     "        task = group[0]\n        latest = {} if task.canary else status.settled(rows)\n",
     "tests/running/test_runner_resume.py::test_an_interrupted_screen_is_resumed_by_the_screen_and_sealed_with_its_table"),
    ("lean tests: FlagGems' reference rows never keyed (one-round category root)", "campaign/judging/stats.py",
     '        if row.role == "reference":     # another implementation\'s time (FlagGems\' torch side): never paired\n'
     '            continue\n', "",
     "tests/planning/test_flaggems_checkout_run.py::test_rows_are_keyed_by_flaggems_shape_and_dtype_with_their_role"),
    ("lean tests: the compile-only report says FlagGems vs torch was not timed", "campaign/reporting/speedup.py",
     "    if not executes:\n        return lines + [\"Not timed:", "    if False:\n        return lines + [\"Not timed:",
     "tests/planning/test_flaggems_checkout_run.py::test_the_sealed_root_verifies_and_reports_ir_and_an_untimed_speedup"),
    ("lean tests: a bare run takes the newest prepared root (noop run)", "campaign/flows/session.py",
     "    return roots[0].resolve()\n", "    return roots[-1].resolve()\n", "tests/flows/test_next_command.py"),
    ("lean tests: a cell's variables in its identity (noop run)", "plugins/run_identity.py",
     '        "env": dict(task.env),\n', '        "env": {},\n',
     "tests/contract/test_cell_env_rules.py::test_a_declared_variable_reaches_its_cell_and_every_set_variable_is_in_identity_and_report"),
    ("lean tests: a key missing from the shared recording is a counted fallback", "plugins/autotune.py",
     '                self.ctx.log.marker(REPLAY_FALLBACK_MARKER, reason="key_missing", kernel=ident[1], key=ident[2])\n', "",
     "tests/worker/test_autotune_sessions.py::test_a_correctness_key_missing_from_the_recording_is_a_counted_fallback"),
    ("lean tests: the shared demo cell's rows counted by status", "worker/cell.py",
     'sum(1 for row in rows.rows if row.status == status)', 'sum(1 for row in rows.rows if row.status == status != "compiled")',
     "tests/worker/test_worker.py::test_one_demo_cell_on_cpu_end_to_end"),
    ("lean tests: an empty plugin plan refused (shared refused cell)", "worker/preflight.py",
     "    if not planned:\n        # an empty plan", "    if False:\n        # an empty plan",
     "tests/worker/test_worker.py::test_an_empty_plugin_plan_is_refused_by_name"),
    ("lean tests: a finished cell never re-run (shared refused cell)", "worker/__main__.py",
     "    if result_path.exists():\n        print(", "    if False:\n        print(",
     "tests/worker/test_worker.py::test_a_finished_cell_is_never_rerun_or_overwritten"),
    ("lean tests: a pinned root's cells all replay (float16 alone)", "campaign/planning/matrix.py",
     '            records = round_number == 1 and cell == "baseline" and not pinned\n',
     '            records = round_number == 1 and cell == "baseline"\n',
     "tests/planning/test_pinned_configs.py::test_every_cell_replays_the_sealed_roots_recording_and_nothing_is_re_tuned"),
    ("lean tests: a committed root verifies (unpacked once)", "campaign/sealing/verification.py",
     "        if digest != entry.sha256 or size != entry.size:", "        if digest == entry.sha256 or size != entry.size:",
     "tests/sealing/test_receipts.py::test_a_committed_root_verifies_and_its_copies_are_its_own[h200-aa-event-20261129T084627Z]"),
    ("lean tests: a rescore names the receipt it read (unpacked once)", "campaign/flows/screen.py",
     '        "receipt_sha256": canonical.sha256_file(root / RECEIPT_FILE),', '        "receipt_sha256": "0" * 64,',
     "tests/contract/test_records.py::test_a_rescore_writes_a_rescore_record"),
    ("lean tests: the committed H200 root reports its moved classes (unpacked once)", "campaign/commands/report.py",
     '    lines = [f"> **Classes moved since the seal.**', '    lines = [f"> **Classes moved.**',
     "tests/contract/test_records.py::test_the_committed_h200_root_reports_as_its_report_md"),
    ("verify reads each cell file once: the receipt's digests handed to the journal", "campaign/sealing/verification.py",
     "journal_differences(root, digests)", "journal_differences(root)",
     "tests/sealing/test_seal_journal.py::test_verify_reads_each_cell_file_once"),
    ("verify reads each cell file once: a known digest reused", "campaign/contract/journal.py",
     "found[rel] = known[rel] if rel in known else _sha256(path)", "found[rel] = _sha256(path)",
     "tests/sealing/test_seal_journal.py::test_a_digest_already_taken_is_reused_and_every_other_file_read"),
    ("fewer processes: a cell folder that cannot be made stops the run named", "campaign/flows/session.py",
     "    except OSError as exc:   # a full disk, an unwritable path: named, never a traceback\n",
     "    except (FileExistsError, PermissionError) as exc:\n",
     "tests/contract/test_faults_named.py::test_a_cell_folder_that_cannot_be_made_is_named"),
    ("fewer processes: a full disk at a task file names the task file", "campaign/running/runner.py",
     "        with faults.naming(cell_dir / TASK_FILE):", "        with faults.naming(cell_dir):",
     "tests/contract/test_faults_named.py::test_a_full_disk_at_a_task_file_names_the_file"),
    ("fewer processes: a file-size limit says to raise it", "campaign/contract/faults.py",
     '"raise the file-size limit (ulimit -f)" if exc.errno == errno.EFBIG', '"make it writable" if exc.errno == errno.EFBIG',
     "tests/contract/test_faults_named.py::test_a_file_size_limit_at_the_status_row_is_named_and_the_cell_runs_again"),
    ("fewer processes: a worker's write fault stops the run with no row", "campaign/running/cellresult.py",
     "    if ended.rc == faults.EXIT_WRITE_FAULT and ended.name == status.rc_name(faults.EXIT_WRITE_FAULT):\n",
     "    if False:\n",
     "tests/running/test_write_faults.py::test_a_full_scratch_dir_in_a_worker_stops_the_run_named_and_the_cell_runs_again"),
    ("fewer processes: a status.tsv that is a FIFO is refused, never read as empty", "campaign/contract/status.py",
     "    if not os.path.lexists(path):\n        return [], []\n", "    if not os.path.isfile(path):\n        return [], []\n",
     "tests/contract/test_bounded_reading.py::test_a_fifo_as_status_tsv_is_refused_before_a_finished_cell_is_moved"),
    ("node bytecode: a Ray task's workers use the node's store", "campaign/running/raynode.py",
     "            with bytecode.reused(workerlaunch.pycache_dir(setup), Path(prepare.project_root), prepare.harness):\n",
     "            if True:\n",
     "tests/running/test_ray.py::test_ray_run_seals_the_same_verdicts_as_one_process"),
    ("node bytecode: a group of workers starts seeded", "campaign/running/bytecode.py",
     "    seed(prefix, store, rule)\n    try:\n", "    try:\n",
     "tests/running/test_bytecode.py::test_a_group_of_workers_starts_seeded_and_leaves_what_it_compiled"),
    ("node bytecode: what a failed group compiled is kept", "campaign/running/bytecode.py",
     "    try:\n        yield\n    finally:\n        keep(prefix, store, rule)\n", "    yield\n    keep(prefix, store, rule)\n",
     "tests/running/test_bytecode.py::test_a_group_of_workers_starts_seeded_and_leaves_what_it_compiled"),
    ("cell isolation: no installed pytest plugin loads in a cell", "campaign/contract/cellenv_rules.py",
     '    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",\n', "",
     "tests/contract/test_cell_env_rules.py::test_a_declared_variable_reaches_its_cell_and_every_set_variable_is_in_identity_and_report"),
    ("cell isolation: torch's CPU pool pinned to one thread", "campaign/contract/cellenv_rules.py",
     '    "OMP_NUM_THREADS": "1",\n', "",
     "tests/contract/test_cell_env_rules.py::test_a_declared_variable_reaches_its_cell_and_every_set_variable_is_in_identity_and_report"),
    ("unthinnable journal: each line's prev is the line before's digest", "campaign/contract/journalcheck.py",
     '        elif data is None or data.get("prev") != previous:\n', "        elif data is None:\n",
     "tests/sealing/test_journal_chain.py::test_a_line_rewritten_over_edited_evidence_breaks_the_chain_at_the_next"),
    ("unthinnable journal: status.tsv's rows are the journal's", "campaign/contract/journalcheck.py",
     "        found += _chain(root, lines) + _prepared(root, lines, known) + _rows(lines, rows)\n",
     "        found += _chain(root, lines) + _prepared(root, lines, known)\n",
     "tests/sealing/test_journal_chain.py::test_no_thinning_of_the_journal_verifies_under_a_receipt_rewritten_to_match"),
    ("unthinnable journal: a chained root without its journal", "campaign/contract/journalcheck.py",
     '            return [(JOURNAL_FILE, "missing ("', '            return found\n            return [(JOURNAL_FILE, "missing ("',
     "tests/sealing/test_journal_chain.py::test_no_thinning_of_the_journal_verifies_under_a_receipt_rewritten_to_match"),
    ("unthinnable journal: a sealed root leaves no task unsettled", "campaign/sealing/verification.py",
     "    if not rows:\n        return []\n", "    if True:\n        return []\n",
     "tests/sealing/test_journal_chain.py::test_no_thinning_of_the_journal_verifies_under_a_receipt_rewritten_to_match"),
    ("unthinnable journal: the manifest's copy journalled at prepare", "campaign/contract/journalcheck.py",
     "        elif now != (sha, size):\n", "        elif False:\n",
     "tests/sealing/test_seal_verify.py::test_a_classifier_that_fails_is_sealed_as_null_verdicts_naming_the_failure"),
    ("unthinnable journal: run checks the journal before it runs", "campaign/flows/session.py",
     "        for line in verification.journal_on_resume(root, PREFIX):", "        for line in []:",
     "tests/sealing/test_journal_chain.py::test_a_run_over_a_thinned_root_with_its_receipt_deleted_is_refused"),
    ("unthinnable journal: one gate refuses an older receipt", "campaign/sealing/verification.py",
     "    if refused is not None:\n        raise Refused(prefix, \"verify\"", "    if False:\n        raise Refused(prefix, \"verify\"",
     "tests/sealing/test_journal_chain.py::test_report_attest_and_compare_refuse_what_verify_refuses_through_one_gate"),
    ("unthinnable journal: run --sign signs as the seal ends", "campaign/flows/session.py",
     "    _sign(root, execution.sign_key)\n    return _sealed(", "    return _sealed(",
     "tests/sealing/test_signing.py::test_run_signs_at_the_seal_and_the_envelope_fails_after_an_edit"),
    ("no fault bricks a root: a seal whose modes fail keeps run.lock", "campaign/flows/session.py",
     "        if not sealed and not receipt.seal_interrupted(root):", "        if not sealed:",
     "tests/sealing/test_seal_faults.py::test_a_mode_the_seal_cannot_set_leaves_a_seal_that_the_next_run_completes"),
    ("no fault bricks a root: a torn last journal line dropped on resume", "campaign/contract/journalcheck.py",
     "    if journal.torn_tail(lines):\n", "    if False:\n",
     "tests/sealing/test_journal_chain.py::test_repair_drops_only_a_torn_or_rowless_last_line"),
    ("no fault bricks a root: a last line whose row never came dropped on resume", "campaign/contract/journalcheck.py",
     "            all(journal.same_row(was, row) for was, row in zip(journalled, rows)):", "            False:",
     "tests/sealing/test_journal_chain.py::test_repair_drops_only_a_torn_or_rowless_last_line"),
    ("no fault bricks a root: a write fault in a measured call is no failed row", "campaign/contract/timers.py",
     "    if faults.write_fault(exc) is not None:\n        raise exc\n", "",
     "tests/plugins/test_timing_sessions.py::test_a_write_fault_in_a_measured_call_is_the_machines_never_a_failed_row"),
    ("no fault bricks a root: verify names a file it cannot read", "campaign/sealing/verification.py",
     "        except OSError as exc:                # a failing disk: that file cannot be verified, named\n",
     "        except rootfiles.NotRegular as exc:\n",
     "tests/sealing/test_seal_faults.py::test_a_read_error_is_named_by_verify_and_by_the_gate"),
    ("no fault bricks a root: the CLI names a file it cannot read", "campaign/cli.py",
     "        refused = faults.read_failed(exc, args.command)\n", "        refused = None\n",
     "tests/sealing/test_seal_faults.py::test_a_read_error_past_the_gate_is_named_never_a_crash_log"),
]


def copy_tree(dest: Path) -> None:
    def ignore(folder, names):
        return [n for n in names if n in IGNORED or n.endswith(".pyc")]
    shutil.copytree(ROOT, dest, ignore=ignore, symlinks=True)


def isolated_python(scratch: Path, tree: Path) -> Path:
    """A virtualenv whose ``campaign`` namespace is ``tree``'s, all four folders of it; the
    finder it installs names ``tree``'s path, so one install serves every copy made there."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # a bare path line: the packages, without the checkout's .pth files (its editable finder)
    (Path(site) / "zz_checkout_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(tree)],
                   check=True, capture_output=True, text=True)
    return python


def run(mutation, scratch: Path) -> tuple[str, float, str]:
    name, file, snippet, replacement, tests = mutation
    tree = scratch / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    copy_tree(tree)
    python = scratch / "venv" / "bin" / "python"
    if not python.exists():
        python = isolated_python(scratch, tree)
    path = tree / file
    text = path.read_text(encoding="utf-8")
    if text.count(snippet) != 1:
        return "stale", 0.0, f"snippet found {text.count(snippet)} times in {file}"
    path.write_text(text.replace(snippet, replacement), encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run([str(python), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests.split()],
                          cwd=tree, capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    failed = [line.split(" - ")[0].replace("FAILED ", "") for line in proc.stdout.splitlines()
              if line.startswith("FAILED ")]
    return ("killed" if proc.returncode == 1 else "SURVIVED" if proc.returncode == 0 else f"rc {proc.returncode}",
            elapsed, failed[0] if failed else proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run the mutations whose name contains this")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if args.only in m[0]]
    print("| protection removed | file | outcome | killed by |")
    print("| --- | --- | --- | --- |")
    bad = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for mutation in chosen:
            outcome, elapsed, by = run(mutation, Path(scratch))
            bad += outcome != "killed"
            print(f"| {mutation[0]} | `{mutation[1]}` | {outcome} ({elapsed:.0f} s) | `{by}` |", flush=True)
    print(f"\n{len(chosen) - bad} of {len(chosen)} killed in {time.monotonic() - started:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

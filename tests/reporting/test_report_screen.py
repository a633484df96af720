"""`campaign report` on a root shaped like a GPU screen: an untimed IR pass (round 0: timer "none",
policy first-config) before a timed round 1 (graph timer, measured tuning) on the workloads whose IR
changed. The caliber guard holds the timing fields among the timed cells and among the IR-pass cells,
never between the two (the H200 screen roots exited 4 on exactly that), and still refuses any real
mismatch: two timed cells on different timers, or an IR pass on other versions than round 1."""
from __future__ import annotations

import rootbuilder as rb

from campaign.contract.runroot import RunRoot
from campaign.judging import caliber, evidence

SKIPPED_ADD = {"add/r1/baseline", "add/r1/control", "add/r1/candidate"}
EVENT = {"kind": "event", "warmup_ms": 25.0, "rep_ms": 100.0, "return_mode": "median", "direct_repeat": None,
         "l2_flush": True}


def _screen(tmp_path, identity=None, skip=SKIPPED_ADD):
    """add (IR unchanged: round 1 skipped) and matmul (IR changed: round 1 timed), sealed as a screen seals."""
    options = rb.Options(ir_pass=True, skip=set(skip), identity=identity or {})
    return rb.screen_root(tmp_path, [rb.pointwise(), rb.mm()], options)


def _caliber_section(markdown: str) -> str:
    return markdown.split("## Caliber", 1)[1].split("## Classes", 1)[0]


def test_a_gpu_screen_root_reports_with_exit_0_its_ir_pass_held_to_its_own_timing_fields(tmp_path, cli):
    root = _screen(tmp_path)
    done = cli("report", root)
    assert done.returncode == 0, done.stderr
    assert "[caliber]" not in done.stderr
    section = _caliber_section(done.stdout)
    assert "| timer.kind | graph |" in section and "| autotune_policy | measured |" in section
    assert ("IR pass (round 0, untimed): timer.kind none, timer.warmup_ms null, timer.rep_ms null, "
            "timer.return_mode null, timer.direct_repeat null, timer.l2_flush null, direct_repeat null, "
            "autotune_policy first-config.") in section
    assert "every other field was compared with the timed cells'" in section


def test_two_timed_cells_on_different_timers_still_exit_4(tmp_path, cli):
    root = _screen(tmp_path, {"matmul/r1/candidate": {"timer": EVENT}})
    done = cli("report", root)
    assert done.returncode == 4, done.stderr
    assert "!!! [caliber] timer.kind: graph vs event (matmul/r1/baseline vs matmul/r1/candidate)" in done.stderr
    # the IR pass's "none" is never the other side of a finding
    assert "none vs" not in done.stderr and "first-config vs" not in done.stderr
    assert done.stdout == ""


def test_ir_pass_cells_on_different_timers_exit_4(tmp_path, cli):
    root = _screen(tmp_path, {"add/r0/candidate": {"timer": EVENT}})
    done = cli("report", root)
    assert done.returncode == 4, done.stderr
    assert "!!! [caliber] timer.kind: none vs event (add/r0/baseline vs add/r0/candidate)" in done.stderr


def test_an_ir_pass_on_other_versions_than_round_1_exits_4(tmp_path, cli):
    # the IR pass decides for round 1 only on the same device and versions
    root = _screen(tmp_path, {f"{w}/r0/{c}": {"triton": "3.5.0"} for w in ("add", "matmul") for c in ("baseline", "candidate")})
    done = cli("report", root)
    assert done.returncode == 4, done.stderr
    assert "!!! [caliber] triton: 3.5.0 vs 3.6.0 (add/r0/baseline vs matmul/r1/baseline" in done.stderr


def test_a_screen_that_timed_nothing_shows_the_ir_pass_caliber(tmp_path, cli):
    skip = SKIPPED_ADD | {"matmul/r1/baseline", "matmul/r1/control", "matmul/r1/candidate"}
    done = cli("report", _screen(tmp_path, skip=skip))
    assert done.returncode == 0, done.stderr
    section = _caliber_section(done.stdout)
    assert "| timer.kind | none |" in section and "| autotune_policy | first-config |" in section
    assert "nothing was timed: the table is the IR pass's" in section


def test_compare_scopes_the_timing_fields_by_timed_and_untimed_cells(tmp_path):
    root = RunRoot(_screen(tmp_path))
    check, _ = evidence.caliber_of(root, root.matrix.tasks)
    assert check.ok and check.workloads == {"add": (), "matmul": ()}
    assert check.ir_pass["timer.kind"] == "none" and check.ir_pass["autotune_policy"] == "first-config"
    assert set(caliber.TIMING_FIELDS) >= {"timer.kind", "autotune_policy", "direct_repeat"}

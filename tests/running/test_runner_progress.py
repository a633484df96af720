"""Progress is outside the loop: counts and ETA from finished cells, plain lines or a live view."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

from campaign.contract.plans import Autotune, Targets, Task
from campaign.contract.status import StatusRow
from campaign.running.progress import PlainProgress, RichProgress, Tally, end_line, make_progress
from campaign.running.runsetup import Pace


def _task(n: int) -> Task:
    return Task(id=f"w/r1/c{n}", order=n, round=1, cell="baseline", workload="w", op="add", provider="builtin",
                canary=False, env={}, autotune=Autotune(mode="record", policy="measured"), timeout_s=60,
                targets=Targets(benchmark="b.py::t", correctness="c.py"), dtypes=("float16",))


def _row(task: Task, elapsed: float, name: str = "ok") -> StatusRow:
    return StatusRow(task.id, 1, "w", "baseline", 0 if name == "ok" else 130, name, elapsed_s=elapsed,
                     rows_ok=2, rows_failed=0)


def test_eta_from_measured_cells_only():
    tasks = tuple(_task(n) for n in range(5))
    tally = Tally(clock=lambda: 0.0)
    tally.start(tasks, {tasks[0].id: _row(tasks[0], 10.0), tasks[1].id: _row(tasks[1], 99.0, "interrupted")})
    assert (tally.done, tally.total) == (1, 5)
    assert tally.eta_s() == 40.0  # mean 10 s x 4 cells left; the interrupted row is not a finish
    tally.end(StatusRow(tasks[1].id, 2, "w", "baseline", None, "skipped", note="SWITCH_NO_IR_DIFF: x"))
    assert tally.done == 2 and tally.eta_s() == 30.0
    assert Tally().eta_s() is None


def _kind_task(workload: str, n: int, timed: bool = True) -> Task:
    return _task(n).model_copy(update={"id": f"{workload}/r{int(timed)}/c{n}", "workload": workload, "timed": timed})


def _kind_row(t: Task, elapsed: float) -> StatusRow:
    return StatusRow(t.id, 1, t.workload, "baseline", 0, "ok", elapsed_s=elapsed, rows_ok=1, rows_failed=0)


def test_eta_learns_from_finished_cells_of_the_same_workload_and_kind():
    """A slow workload's cells say nothing about a fast one's; an untimed IR-pass cell nothing about a
    timed one: a kind none of which has finished is counted apart, never estimated from the other."""
    slow = [_kind_task("mm", n) for n in range(3)]
    fast = [_kind_task("add", n) for n in range(3)]
    ir_pass = [_kind_task("add", n, timed=False) for n in range(2)]
    tally = Tally(clock=lambda: 0.0)
    tally.start(tuple(slow + fast + ir_pass), {})
    assert tally.eta_s() is None and tally.eta_text() == "?"
    tally.end(_kind_row(slow[0], 60.0))
    assert tally.eta_s() == 60.0 * 5          # the timed cells at the one timed mean; the IR pass apart
    assert tally.unestimated() == {False: 2}
    assert tally.eta_text() == "0:05:00; 2 IR-pass cell(s) not yet estimated"
    tally.end(_kind_row(fast[0], 6.0))
    assert tally.eta_s() == 2 * 60.0 + 2 * 6.0
    tally.end(_kind_row(ir_pass[0], 2.0))
    assert tally.estimate_s(ir_pass[1].id) == 2.0 and tally.eta_s() == 2 * 60.0 + 2 * 6.0 + 2.0
    assert tally.unestimated() == {} and tally.eta_text() == "0:02:14"


def test_eta_of_an_ir_pass_is_its_lanes_wall_at_the_weights_pace():
    """The offline whole-suite screen's case: 2 lanes, weighed workloads, heaviest first. Its first two
    cells (one workload's two sides, 644 s each, weight 344) once made an ETA of 319 h: every one of
    1,785 cells at 644 s, one after another, timed cells included, though offline none is timed. Now:
    each IR-pass cell left at its weight x 644/344, the sum over the 2 lanes, the timed cells apart."""
    weights = {"heavy": 344.0, **{f"w{n}": 10.0 for n in range(100)}}
    ir_pass = [_kind_task(name, side, timed=False) for name in weights for side in range(2)]
    timed = [_kind_task(name, 10 + n) for name in weights for n in range(4)]
    tally = Tally(clock=lambda: 0.0)
    tally.start(tuple(ir_pass + timed), {}, Pace(untimed_at_once=2, weights=weights))
    tally.end(_kind_row(ir_pass[0], 644.0))
    tally.end(_kind_row(ir_pass[1], 644.0))
    rate = 644.0 / 344.0
    assert tally.estimate_s(ir_pass[2].id) == pytest.approx(10.0 * rate)
    assert tally.eta_s() == pytest.approx(200 * 10.0 * rate / 2)          # 31 min, not 319 h
    assert tally.unestimated() == {True: 404}
    assert tally.eta_text() == "0:31:12, IR pass over 2 lanes; 404 timed cell(s) not yet estimated"
    # the first timed cell: the timed cells at its pace, one at a time
    tally.end(_kind_row(timed[0], 30.0))
    assert tally.unestimated() == {}
    assert tally.eta_s() == pytest.approx(200 * 10.0 * rate / 2 + 3 * 30.0 + 400 * 10.0 * 30.0 / 344.0)
    # without weights a cell left is its kind's mean
    plain = Tally(clock=lambda: 0.0)
    plain.start(tuple(ir_pass), {}, Pace(untimed_at_once=2))
    plain.end(_kind_row(ir_pass[0], 644.0))
    assert plain.eta_s() == pytest.approx(201 * 644.0 / 2)


def test_plain_lines_one_per_start_and_end():
    out = io.StringIO()
    progress = make_progress(out)
    assert isinstance(progress, PlainProgress)
    task = _task(0)
    progress.started((task,), {})
    progress.cell_started(task)
    progress.cell_ended(task, _row(task, 2.5))
    lines = out.getvalue().splitlines()
    assert lines == ["run: 0/1 cells already finished", "[1/1] start w/r1/c0 (timeout 60s)",
                     "[1/1] end w/r1/c0: rc=0 ok | 2.5s | rows ok=2 failed=0 (eta 0:00:00)"]
    assert end_line(StatusRow("t", 1, "w", "candidate", 3, "preflight_failed", preflight_failed="triton_version",
                              markers={"AUTOTUNE_REPLAY_FALLBACK": 2})) == \
        "t: rc=3 preflight_failed | AUTOTUNE_REPLAY_FALLBACK=2 | PREFLIGHT_FAILED check=triton_version"


def test_rich_live_view_on_a_terminal():
    out = io.StringIO()
    progress = RichProgress(Console(file=out, force_terminal=True, width=100))
    task = _task(0)
    progress.started((task,), {})
    progress.cell_started(task)
    progress.cell_ended(task, _row(task, 1.0))
    progress.close()
    text = out.getvalue()
    assert "end w/r1/c0: rc=0 ok" in text and "cells" in text

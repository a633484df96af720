"""Progress is outside the loop: counts and ETA from finished cells, plain lines or a live view."""
from __future__ import annotations

import io

from rich.console import Console

from campaign.contract.plans import Autotune, Targets, Task
from campaign.contract.status import StatusRow
from campaign.running.progress import PlainProgress, RichProgress, Tally, end_line, make_progress


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


def test_eta_learns_from_finished_cells_of_the_same_workload_and_kind():
    """A slow workload's cells say nothing about a fast one's; an untimed IR-pass cell nothing about a timed one."""
    def task(workload: str, n: int, timed: bool = True) -> Task:
        return _task(n).model_copy(update={"id": f"{workload}/r{int(timed)}/c{n}", "workload": workload,
                                           "timed": timed})

    def row(t: Task, elapsed: float) -> StatusRow:
        return StatusRow(t.id, 1, t.workload, "baseline", 0, "ok", elapsed_s=elapsed, rows_ok=1, rows_failed=0)

    slow = [task("mm", n) for n in range(3)]
    fast = [task("add", n) for n in range(3)]
    ir_pass = [task("add", n, timed=False) for n in range(2)]
    tally = Tally(clock=lambda: 0.0)
    tally.start(tuple(slow + fast + ir_pass), {})
    assert tally.eta_s() is None
    tally.end(row(slow[0], 60.0))
    assert tally.eta_s() == 60.0 * 7          # nothing else known: every cell left at the one mean
    tally.end(row(fast[0], 6.0))
    # mm: 2 x 60; add timed: 2 x 6; add's IR pass: no untimed cell yet, so the timed cells' mean (33)
    assert tally.eta_s() == 2 * 60.0 + 2 * 6.0 + 2 * 33.0
    tally.end(row(ir_pass[0], 2.0))
    assert tally.estimate_s(ir_pass[1].id) == 2.0 and tally.eta_s() == 2 * 60.0 + 2 * 6.0 + 2.0


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

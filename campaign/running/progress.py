"""What a person watching `run` sees; the loop only calls these (`campaign.running.runner.Events`).

On a terminal: a rich live view -- cells done/total, the current cell and its
elapsed time, the campaign's elapsed time, an ETA learnt from the finished
cells of each workload and kind (`Tally`) -- with each finished cell printed above it. Otherwise
plain lines, one when a cell starts and one when it ends, for logs and CI.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable, Optional, TextIO

from campaign.contract.errors import PREFLIGHT_FAILED
from campaign.contract.plans import Task
from campaign.contract.status import SKIPPED, StatusRow


def end_line(row: StatusRow) -> str:
    parts = [f"rc={row.rc if row.rc is not None else '-'} {row.rc_name}"]
    if row.elapsed_s is not None:
        parts.append(f"{row.elapsed_s:.1f}s")
    if row.rows_ok is not None:
        parts.append(f"rows ok={row.rows_ok} failed={row.rows_failed}")
    if row.markers and any(row.markers.values()):
        parts.append(" ".join(f"{name}={count}" for name, count in row.markers.items() if count))
    if row.preflight_failed:
        parts.append(f"{PREFLIGHT_FAILED} check={row.preflight_failed}")
    if row.note:
        parts.append(row.note)
    return f"{row.task_id}: " + " | ".join(parts)


class Tally:
    """Counts and the ETA, shared by both views. The ETA learns from finished cells: each cell left
    is estimated by the mean of the finished cells of its own workload and kind (timed, or an
    untimed IR pass), else of its kind, else of every finished cell."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.total = 0
        self.done = 0
        self.measured: dict[tuple[str, bool], list[float]] = {}
        self.kinds: dict[str, tuple[str, bool]] = {}      # task id -> (workload, timed)
        self.left: set[str] = set()
        self.started_at = clock()
        self.current: Optional[Task] = None
        self.current_since = self.started_at

    def start(self, tasks: tuple[Task, ...], rows: dict[str, StatusRow]) -> None:
        self.total = len(tasks)
        self.kinds = {task.id: (task.workload, task.timed) for task in tasks}
        finished = [row for row in rows.values() if row.finished]
        self.done = len(finished)
        self.left = set(self.kinds) - {row.task_id for row in finished}
        for row in finished:
            self._measure(row)

    def _measure(self, row: StatusRow) -> None:
        if row.elapsed_s is not None and row.rc_name != SKIPPED:
            kind = self.kinds.get(row.task_id, (row.workload, True))
            self.measured.setdefault(kind, []).append(row.elapsed_s)

    def begin(self, task: Task) -> None:
        self.current, self.current_since = task, self.clock()

    def end(self, row: StatusRow, settled: bool = True) -> int:
        """Count a row; the position to show for it: its start's, whether it settled its task or not."""
        self.current = None
        counted = settled and row.finished
        if counted:
            self.done += 1
            self.left.discard(row.task_id)
            self._measure(row)
        return self.done if counted else self.done + 1

    def estimate_s(self, task_id: str) -> Optional[float]:
        """One cell left: its workload and kind's mean, else its kind's, else every finished cell's."""
        workload, timed = self.kinds[task_id]
        for found in (self.measured.get((workload, timed)),
                      [s for (_, t), seconds in self.measured.items() if t is timed for s in seconds],
                      [s for seconds in self.measured.values() for s in seconds]):
            if found:
                return statistics.fmean(found)
        return None

    def eta_s(self) -> Optional[float]:
        """The cells left, each at its estimate (skips make it pessimistic); None before any cell finished."""
        if not self.measured:
            return None
        return sum(self.estimate_s(task_id) or 0.0 for task_id in self.left)


def _clock_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class PlainProgress:
    def __init__(self, stream: TextIO = sys.stdout):
        self.stream = stream
        self.tally = Tally()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def started(self, tasks, rows) -> None:
        self.tally.start(tasks, rows)
        self._print(f"run: {self.tally.done}/{self.tally.total} cells already finished")

    def cell_started(self, task: Task) -> None:
        self.tally.begin(task)
        self._print(f"[{self.tally.done + 1}/{self.tally.total}] start {task.id} (timeout {task.timeout_s}s)")

    def cell_ended(self, task: Task, row: StatusRow, settled: bool = True) -> None:
        position = self.tally.end(row, settled)
        self._print(f"[{position}/{self.tally.total}] end {end_line(row)} "
                    f"(eta {_clock_text(self.tally.eta_s())})")

    def note(self, text: str) -> None:
        self._print(f"note: {text}")

    def close(self) -> None:
        pass


class RichProgress(PlainProgress):
    """Plain lines scroll above a live panel that redraws the counts and the current cell."""

    def __init__(self, console=None):
        from rich.console import Console
        from rich.live import Live

        super().__init__()
        self.console = console or Console()
        self.live = Live(self._render(), console=self.console, refresh_per_second=2, transient=True,
                         get_renderable=self._render)
        self.live.start()

    def _print(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def _render(self):
        from rich.table import Table

        tally = self.tally
        now = tally.clock()
        table = Table.grid(padding=(0, 2))
        table.add_row("cells", f"{tally.done}/{tally.total}")
        if tally.current is not None:
            table.add_row("current", f"{tally.current.id} ({_clock_text(now - tally.current_since)})")
        table.add_row("elapsed", _clock_text(now - tally.started_at))
        table.add_row("eta", _clock_text(tally.eta_s()))
        return table

    def close(self) -> None:
        self.live.stop()


def make_progress(stream: TextIO = sys.stdout):
    return RichProgress() if stream.isatty() else PlainProgress(stream)

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
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, TextIO

from campaign.contract.errors import PREFLIGHT_FAILED
from campaign.contract.plans import Task
from campaign.contract.status import SKIPPED, StatusRow
from campaign.running.runsetup import Pace


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


@dataclass(frozen=True)
class _Forecast:
    eta_s: Optional[float]            # the wall of the estimated cells left; None before any cell finished
    apart: dict[bool, int]            # cells left with no estimate, by kind (timed -> count)
    untimed_left: int                 # IR-pass cells left


class Tally:
    """Counts and the ETA, shared by both views. The ETA is wall time, learnt from finished cells of the
    same kind (timed, or an untimed IR-pass cell), never across kinds: one cell left is estimated by
    the mean of the finished cells of its own workload and kind; else, where the manifest weighs the
    workloads (``weight_s``) and cells of its kind and weight finished, by its weight at the seconds
    per weight those cells took; else by its kind's mean. A cell of a kind none of which has finished
    has no estimate: the line counts it apart, so an IR pass's seconds never stand in for timing's
    (the offline whole-suite screen once printed 319 h, 1,785 cells at its first two IR-pass cells'
    644 s, for a pass of about 2 h). Untimed cells run ``untimed_at_once`` at a time (the IR pass's
    lanes), timed cells ``timed_at_once`` (alone on a card; a Ray cluster's slots)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.total = 0
        self.done = 0
        self.measured: dict[tuple[str, bool], list[float]] = {}
        self.kinds: dict[str, tuple[str, bool]] = {}      # task id -> (workload, timed)
        self.left: set[str] = set()
        self.weights: Mapping[str, Optional[float]] = {}
        self.at_once = {False: 1, True: 1}                 # timed -> cells at a time
        self._learnt: Optional[tuple[dict[bool, float], dict[bool, float]]] = None
        self._forecasted: Optional[tuple[int, _Forecast]] = None         # (done when worked out, the forecast)
        self.started_at = clock()
        self.current: Optional[Task] = None
        self.current_since = self.started_at

    def start(self, tasks: tuple[Task, ...], rows: dict[str, StatusRow], pace: Optional[Pace] = None) -> None:
        pace = pace or Pace()
        self._forecasted = None
        self.total = len(tasks)
        self.kinds = {task.id: (task.workload, task.timed) for task in tasks}
        self.weights = dict(pace.weights)
        self.at_once = {False: max(1, pace.untimed_at_once), True: max(1, pace.timed_at_once)}
        finished = [row for row in rows.values() if row.finished]
        self.done = len(finished)
        self.left = set(self.kinds) - {row.task_id for row in finished}
        for row in finished:
            self._measure(row)

    def _measure(self, row: StatusRow) -> None:
        if row.elapsed_s is not None and row.rc_name != SKIPPED:
            kind = self.kinds.get(row.task_id, (row.workload, True))
            self.measured.setdefault(kind, []).append(row.elapsed_s)
            self._learnt = None

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

    def _rates(self) -> tuple[dict[bool, float], dict[bool, float]]:
        """Per kind (timed -> value): the finished cells' mean, and their seconds per second of weight
        where their workloads are weighed. Learnt again only when a cell has finished since."""
        if self._learnt is None:
            means: dict[bool, list[float]] = {}
            weighed: dict[bool, list[float]] = {}                 # [seconds, weight]
            for (workload, timed), found in self.measured.items():
                means.setdefault(timed, []).extend(found)
                weight = self.weights.get(workload)
                if weight:
                    pair = weighed.setdefault(timed, [0.0, 0.0])
                    pair[0] += sum(found)
                    pair[1] += weight * len(found)
            self._learnt = ({timed: statistics.fmean(found) for timed, found in means.items()},
                            {timed: pair[0] / pair[1] for timed, pair in weighed.items()})
        return self._learnt

    def estimate_s(self, task_id: str) -> Optional[float]:
        """One cell left: its workload and kind's mean; else its weight at its kind's seconds per weight;
        else its kind's mean; None where no cell of its kind has finished."""
        workload, timed = self.kinds[task_id]
        own = self.measured.get((workload, timed))
        if own:
            return statistics.fmean(own)
        means, per_weight = self._rates()
        weight = self.weights.get(workload)
        if weight and timed in per_weight:
            return per_weight[timed] * weight
        return means.get(timed)

    def eta_s(self) -> Optional[float]:
        """The wall the estimated cells left take: each kind's seconds over the cells it runs at a time
        (skips make it pessimistic); None before any cell finished."""
        return self._forecast().eta_s

    def unestimated(self) -> dict[bool, int]:
        """Cells left with no estimate (no cell of their kind has finished), by kind (timed -> count)."""
        return self._forecast().apart

    def _forecast(self) -> _Forecast:
        """The wall of the estimated cells left, and the count of those without one; worked out again only
        when a cell has been counted since (the live view redraws twice a second)."""
        if self._forecasted is None or self._forecasted[0] != self.done:
            self._forecasted = (self.done, self._work_out())
        return self._forecasted[1]

    def _work_out(self) -> _Forecast:
        untimed_left = sum(1 for task_id in self.left if not self.kinds[task_id][1])
        if not self.measured:
            return _Forecast(None, {}, untimed_left)
        total = {False: 0.0, True: 0.0}
        apart: dict[bool, int] = {}
        for task_id in self.left:
            estimate, timed = self.estimate_s(task_id), self.kinds[task_id][1]
            if estimate is None:
                apart[timed] = apart.get(timed, 0) + 1
            else:
                total[timed] += estimate
        return _Forecast(sum(seconds / self.at_once[timed] for timed, seconds in total.items()), apart, untimed_left)

    def eta_text(self) -> str:
        """The ETA as a line shows it, naming its lanes and the cells it leaves out."""
        forecast = self._forecast()
        text = _clock_text(forecast.eta_s)
        if forecast.eta_s is None:
            return text
        lanes = self.at_once[False]
        if lanes > 1 and forecast.untimed_left:
            text += f", IR pass over {lanes} lanes"
        for timed, label in ((True, "timed"), (False, "IR-pass")):
            if forecast.apart.get(timed):
                text += f"; {forecast.apart[timed]} {label} cell(s) not yet estimated"
        return text


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

    def started(self, tasks, rows, pace: Optional[Pace] = None) -> None:
        self.tally.start(tasks, rows, pace)
        self._print(f"run: {self.tally.done}/{self.tally.total} cells already finished")

    def cell_started(self, task: Task) -> None:
        self.tally.begin(task)
        self._print(f"[{self.tally.done + 1}/{self.tally.total}] start {task.id} (timeout {task.timeout_s}s)")

    def cell_ended(self, task: Task, row: StatusRow, settled: bool = True) -> None:
        position = self.tally.end(row, settled)
        self._print(f"[{position}/{self.tally.total}] end {end_line(row)} "
                    f"(eta {self.tally.eta_text()})")

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
        table.add_row("eta", tally.eta_text())
        return table

    def close(self) -> None:
        self.live.stop()


def make_progress(stream: TextIO = sys.stdout):
    return RichProgress() if stream.isatty() else PlainProgress(stream)

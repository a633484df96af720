"""The one loop that settles a group of cells: claim what is not settled, skip what the rounds
policy skips, launch the rest where a placement puts them, record each row, until every cell of
the group is settled (`campaign.contract.status.settled`) or the runner is stopped.

A placement is where the runnable cells run, and nothing else: one worker process per cell
(`campaign.running.oneprocess.OneProcess`), one batch process for several workloads of one side
(`campaign.running.batch.BatchRun`), or a process of one IR-pass lane over its side's queue
(`campaign.running.sidequeue.SideQueue`: several lanes settle one group at once, each taking only
what no other lane holds), or a Ray head's wave of workloads, one Ray task each
(`campaign.running.raywave.RayWave`). It records each cell's row through the runner as the cell ends, and
says whether the runner was stopped. The rounds policy (`campaign.running.rounds`) is asked before
every launch, so a skip is decided per workload, before its process starts.

Cells that will not run where they were placed get their row here too (`mark`): a card that failed
its check or whose runner died (`campaign.flows.cardrun`), a Ray task lost or cancelled
(`campaign.running.rayexec`). Such a row is history, never a finish: a resume runs the cell again.
"""
from __future__ import annotations

import threading
from typing import Callable, Protocol

from campaign.contract import status
from campaign.contract.plans import Task
from campaign.contract.status import StatusRow
from campaign.running.rounds import Skip, skipped_row


class Records(Protocol):
    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> object:
        """Append ``task``'s row to status.tsv and ``rows``."""


class Skips(Protocol):
    def skip(self, task: Task, latest: dict[str, StatusRow]) -> Skip:
        """Whether ``task`` is not worth running (`campaign.running.rounds.Rounds`)."""


class Recorder(Records, Protocol):
    """What the loop uses of the runner (`campaign.running.runner.Runner`, a Ray head)."""
    stop: threading.Event
    rounds: Skips

    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]: ...


class Placement(Protocol):
    def available(self, todo: tuple[Task, ...]) -> tuple[Task, ...]:
        """The unsettled tasks this placement may take now; none: the rest is held elsewhere (another lane)."""

    def claim(self, task: Task) -> None:
        """The task is about to be skipped or launched: an unfinished folder of its own is the placement's."""

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        """Run ``tasks``, each row recorded as it ends; True when the runner was stopped."""


def unsettled(tasks: tuple[Task, ...], rows: list[StatusRow]) -> tuple[Task, ...]:
    """The tasks ``rows`` do not settle, in their order."""
    latest = status.settled(rows)
    return tuple(task for task in tasks if task.id not in latest)


def settle(runner: Recorder, group: tuple[Task, ...], rows: list[StatusRow], placement: Placement,
           in_lanes: bool = False) -> bool:
    """Run the group's unsettled tasks until each is settled, or held by another placement; True when the
    runner was stopped. A task that a launch leaves unsettled (a first death by a signal) is claimed and
    launched again at once -- but ``in_lanes`` (an IR-pass lane beside others on its card), never a task
    that ran out of device memory beside other lanes: it is left for the runner to run alone after them
    (`campaign.contract.status.run_alone`)."""
    latest = status.settled(rows)
    while True:
        alone = status.run_alone(rows, latest) if in_lanes else set()
        todo = placement.available(tuple(task for task in group if task.id not in latest and task.id not in alone))
        if not todo:
            return False
        if runner.stop.is_set():
            return True
        runnable = []
        for task in todo:               # adaptive rounds: decided per workload before its process starts
            placement.claim(task)
            skip = runner.rounds.skip(task, latest)
            if skip:
                latest = runner.record(task, skipped_row(task, *skip), rows)
            else:
                runnable.append(task)
        if not runnable:
            return False
        stopped = placement.launch(tuple(runnable), rows)
        latest = status.settled(rows)
        if stopped:
            return True


def mark(recorder: Records, tasks: tuple[Task, ...], rows: list[StatusRow], row: Callable[[Task], StatusRow]) -> None:
    """``row(task)`` recorded for each of ``tasks`` that ``rows`` do not settle, in matrix order: cells
    that will not run where they were placed (card_failed, interrupted: history, never a finish)."""
    for task in unsettled(tuple(sorted(tasks, key=lambda t: t.order)), rows):
        recorder.record(task, row(task), rows)

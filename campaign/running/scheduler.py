"""The one loop that settles a group of cells: claim what is not settled, skip what the rounds
policy skips, launch the rest where a placement puts them, record each row, until every cell of
the group is settled (`campaign.contract.status.settled`) or the runner is stopped.

A placement is where the runnable cells run, and nothing else: one worker process per cell
(`campaign.running.oneprocess.OneProcess`), or one batch process for several workloads of one side
(`campaign.running.batch.BatchRun`). It records each cell's row through the runner as the cell
ends, and says whether the runner was stopped. The rounds policy (`campaign.running.rounds`) is
asked before every launch, so a skip is decided per workload, before its process starts.
"""
from __future__ import annotations

import threading
from typing import Protocol

from campaign.contract import status
from campaign.contract.plans import Task
from campaign.contract.status import StatusRow
from campaign.running.rounds import Rounds, skipped_row


class Recorder(Protocol):
    """What the loop uses of the runner (`campaign.running.runner.Runner`)."""
    stop: threading.Event
    rounds: Rounds

    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]: ...


class Placement(Protocol):
    def claim(self, task: Task) -> None:
        """The task is about to be skipped or launched: an unfinished folder of its own is the placement's."""

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        """Run ``tasks``, each row recorded as it ends; True when the runner was stopped."""


def settle(runner: Recorder, group: tuple[Task, ...], rows: list[StatusRow], placement: Placement) -> bool:
    """Run the group's unsettled tasks until each is settled; True when the runner was stopped. A task
    that a launch leaves unsettled (a first death by a signal) is claimed and launched again at once."""
    latest = status.settled(rows)
    while True:
        todo = [task for task in group if task.id not in latest]
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

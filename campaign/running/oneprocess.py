"""The placement of one cell in one worker process (`campaign.running.scheduler`): its task.json,
the worker started on ``task.json result.json``, its row recorded when it ends
(`campaign.running.runner.Runner.run_cell`). A cell folder left unfinished (a killed runner, an
interrupted or killed cell) is moved aside to ``<cell>.interrupted-<n>``, kept, and the cell runs again.
"""
from __future__ import annotations

from typing import Protocol

from campaign.contract import status
from campaign.contract.artifacts import set_aside
from campaign.contract.plans import Task
from campaign.contract.status import StatusRow
from campaign.running.runsetup import Events, RunSetup


class CellRunner(Protocol):
    setup: RunSetup
    events: Events

    def run_cell(self, task: Task) -> StatusRow: ...
    def record(self, task: Task, row: StatusRow, rows: list[StatusRow]) -> dict[str, StatusRow]: ...


class OneProcess:
    def __init__(self, runner: CellRunner):
        self.runner = runner

    def available(self, todo: tuple[Task, ...]) -> tuple[Task, ...]:
        return todo

    def claim(self, task: Task) -> None:
        folder = self.runner.setup.root.cell(task.id)
        if folder.exists():
            moved = set_aside(folder)
            self.runner.events.note(f"{task.id}: unfinished cell folder kept as {moved.name}; running it again")

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        for task in tasks:
            row = self.runner.run_cell(task)
            self.runner.record(task, row, rows)
            if row.rc_name == status.INTERRUPTED:
                return True
        return False

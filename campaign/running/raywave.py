"""The placement of a Ray head's wave (`campaign.running.rayexec`): the workloads of one wave
(canaries first, then the rest) as Ray tasks, one workload each, through the one loop that settles
cells (`campaign.running.scheduler.settle`).

The head places workloads, never single cells: a launch submits each workload of its tasks once, as
the cluster's slots free, and waits for them all (`rayexec.RayExecutor.wave`: its rows merged as each
task answers, a lost task's rows ``card_failed``). A workload submitted once in a run is not taken
again: what a lost task left unsettled is history, which a resume runs again; nor is anything after
the cluster stopped answering. A workload's rounds are decided on its node, by the runner there
(`campaign.running.raynode` -> `campaign.running.cards.run_group`), through the same loop: the head
skips nothing itself (`OnTheNode`).
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from campaign.contract.plans import Task
from campaign.contract.status import StatusRow
from campaign.running.rounds import Skip
from campaign.running.runner import CANARY_FAILED, INTERRUPTED, Outcome


class Head(Protocol):
    """What the placement uses of the head (`campaign.running.rayexec.RayExecutor`)."""
    submitted: set[str]
    unreachable: Optional[str]

    def wave(self, ray, remote, workloads: list[str], rows: list[StatusRow], slots: int, probe) -> Optional[Outcome]: ...


class OnTheNode:
    """The head's rounds policy: none; each workload's node decides its rounds."""

    def skip(self, task: Task, latest: dict[str, StatusRow]) -> Skip:
        return None


class RayWave:
    def __init__(self, head: Head, ray: Any, remote: Any, slots: int, probe: Any):
        self.head, self.ray, self.remote, self.slots, self.probe = head, ray, remote, slots, probe
        self.canary: Optional[Outcome] = None       # a failed canary's outcome, as the head returns it

    def available(self, todo: tuple[Task, ...]) -> tuple[Task, ...]:
        if self.head.unreachable is not None:
            return ()
        return tuple(task for task in todo if task.workload not in self.head.submitted)

    def claim(self, task: Task) -> None:
        """Nothing: the head sets a workload's unfinished folders aside as it submits the workload."""

    def launch(self, tasks: tuple[Task, ...], rows: list[StatusRow]) -> bool:
        workloads = list(dict.fromkeys(task.workload for task in tasks))
        outcome = self.head.wave(self.ray, self.remote, workloads, rows, self.slots, self.probe)
        if outcome is not None and outcome.state == CANARY_FAILED:
            self.canary = outcome
        return outcome is not None and outcome.state == INTERRUPTED

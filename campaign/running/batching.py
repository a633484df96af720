"""Which workloads share a worker process, and what its progress file says: pure functions.

A batch is a run of tasks of one round and one cell (one side of the comparison: the
A and B sides never share a process), at most ``defaults.workloads_per_process`` of
them, executed by one worker in sequence (`campaign.running.batch`). The order:

- bound 1: the matrix order, one task per process -- exactly the run without batching;
- otherwise canaries first, alone, in matrix order (a broken canary stops the campaign
  before anything is batched behind it); then, round by round and in each round's cell
  order, every workload's task of that cell, split into near-equal batches. Round 1's
  baseline (the recording cell) comes before the cells that replay it, and every round 1
  before a later round, whose skip (adaptive rounds) is decided before its batch starts.

progress.tsv (`PROGRESS_COLUMNS`) is appended by the worker, one whole line per event; a
line without its newline is one being written (or torn by a kill) and is not read.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from campaign.contract.artifacts import PROGRESS_COLUMNS, Task


def groups(tasks: Sequence[Task], bound: int) -> tuple[tuple[Task, ...], ...]:
    ordered = sorted(tasks, key=lambda t: t.order)
    if bound <= 1:
        return tuple((task,) for task in ordered)
    out: list[tuple[Task, ...]] = [(task,) for task in ordered if task.canary]
    sides: dict[tuple[int, str], list[Task]] = {}       # first appearance is the run order
    for task in ordered:
        if not task.canary:
            sides.setdefault((task.round, task.cell), []).append(task)
    for members in sides.values():
        count = math.ceil(len(members) / bound)
        size = math.ceil(len(members) / count)            # near-equal: 5 at bound 4 is 3 + 2, not 4 + 1
        out += [tuple(members[at:at + size]) for at in range(0, len(members), size)]
    return tuple(out)


@dataclass(frozen=True)
class Event:
    kind: str                            # "start" | "end"
    task_id: str
    unix: float
    monotonic: float
    rc: Optional[int]                    # on "end" only


def event_line(kind: str, task_id: str, unix: float, monotonic: float, rc: Optional[int] = None) -> str:
    return "\t".join((kind, task_id, repr(unix), repr(monotonic), "" if rc is None else str(rc))) + "\n"


def parse(text: str) -> list[Event]:
    """Whole lines only; a line that is not an event is not one (never a crash of the runner)."""
    events = []
    for line in text.split("\n")[:-1]:
        parts = line.split("\t")
        if len(parts) != len(PROGRESS_COLUMNS) or parts[0] not in ("start", "end"):
            continue
        try:
            rc = int(parts[4]) if parts[4] != "" else None
            events.append(Event(parts[0], parts[1], float(parts[2]), float(parts[3]), rc))
        except ValueError:
            continue
    return events


def read(path: Path) -> list[Event]:
    try:
        return parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return []


@dataclass(frozen=True)
class Progress:
    """What one process's events say about its tasks (given in the order it runs them)."""

    started: dict[str, Event]
    ended: dict[str, Event]

    @classmethod
    def of(cls, events: Sequence[Event]) -> "Progress":
        return cls({e.task_id: e for e in events if e.kind == "start"},
                   {e.task_id: e for e in events if e.kind == "end"})

    def current(self, tasks: Sequence[Task]) -> Optional[Task]:
        """The first task without its end: the one running, or next to run."""
        return next((task for task in tasks if task.id not in self.ended), None)

    def since(self, tasks: Sequence[Task], task: Task, spawn: tuple[float, float]) -> tuple[float, float]:
        """(unix, monotonic) from which ``task``'s time counts: the end of the task before it in
        this process, or the spawn for the first: every second of a process is some task's."""
        at = [t.id for t in tasks].index(task.id)
        if at == 0:
            return spawn
        before = self.ended.get(tasks[at - 1].id)
        return spawn if before is None else (before.unix, before.monotonic)

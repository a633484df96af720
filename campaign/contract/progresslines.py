"""progress.tsv's lines (`PROGRESS_COLUMNS`): the batch worker writes them, the runner parses them.

One whole line per event, appended; a line without its newline is one being written (or
torn by a kill) and is not read. Here, on neither side, so that the worker never imports
the runner's modules to write a line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from campaign.contract.artifacts import PROGRESS_COLUMNS


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

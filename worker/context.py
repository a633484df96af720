"""What every plugin of a cell is built from: the plan (its terms included), the cell folder and its log.

Plugin modules under `campaign.plugins` expose ``make(ctx: CellContext)`` returning
a pytest plugin object; the worker builds them in plan order and hands them to
``pytest.main(plugins=...)``. Plugins communicate with the parent only through
files named in `campaign.contract.artifacts` and through marker lines counted here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from campaign.contract.artifacts import MARKERS, RUN_LOG
from campaign.contract.plans import CellPlan

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@dataclass
class CellLog:
    """run.log: ANSI-free lines; markers are counted as they are written, never grepped later."""

    path: Path
    counts: dict[str, int] = field(default_factory=lambda: {name: 0 for name in MARKERS})

    def line(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(_ANSI.sub("", text).rstrip("\n") + "\n")

    def marker(self, name: str, **fields: object) -> None:
        if name not in self.counts:
            raise ValueError(f"unknown marker {name}")
        self.counts[name] += 1
        detail = " ".join(f"{key}={value}" for key, value in fields.items())
        self.line(f"{name} {detail}".rstrip())


@dataclass
class CellContext:
    plan: CellPlan
    cell_dir: Path
    log: CellLog
    backend: object                 # campaign.backends.base.Backend

    @property
    def task(self):
        return self.plan.task

    @property
    def terms(self):
        """The campaign's terms as matrix.json froze them (device, pins, timer, bench level, IR stage)."""
        return self.plan.terms

    @classmethod
    def for_cell(cls, plan: CellPlan, backend: object) -> "CellContext":
        cell_dir = Path(plan.cell_dir)
        return cls(plan=plan, cell_dir=cell_dir, log=CellLog(cell_dir / RUN_LOG), backend=backend)

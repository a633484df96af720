"""What every plugin of a cell is built from: the plan, the manifest, the cell folder and its log.

Plugin modules under `campaign.plugins` expose ``make(ctx: CellContext)`` returning
a pytest plugin object; the worker builds them in plan order and hands them to
``pytest.main(plugins=...)``. Plugins communicate with the parent only through
files named in `campaign.contract.artifacts` and through marker lines counted here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from campaign.contract.artifacts import MARKERS, RUN_LOG, CellPlan
from campaign.contract.manifest import Manifest

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
    manifest: Manifest
    cell_dir: Path
    log: CellLog
    backend: object                 # campaign.backends.base.Backend

    @property
    def task(self):
        return self.plan.task

    @classmethod
    def for_cell(cls, plan: CellPlan, manifest: Manifest, backend: object) -> "CellContext":
        cell_dir = Path(plan.cell_dir)
        return cls(plan=plan, manifest=manifest, cell_dir=cell_dir, log=CellLog(cell_dir / RUN_LOG), backend=backend)

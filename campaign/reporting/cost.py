"""Where a root's seconds went: per workload and phase, per cell, and in total (`campaign cost`).

Pure over what the command read: each task's phase record (``phases.json``, written by the
worker: `campaign.worker.phases`) and its status row. Two clocks, both shown: a cell's
``phases`` sum the worker's own record (process start to its result), its ``wall`` is the
runner's elapsed time (status.tsv: spawn to exit, the interpreter's teardown included).

A cell that ran without a phase record (written before phases existed, or killed before
its result) is *not recorded*, never zero: the per-workload sums cover the recorded cells
and say how many those are. A phase a recorded cell could not measure (``start`` without
/proc) leaves that phase's sum unknown for its workload and the total. A screen's untimed
IR pass (round 0) is a cell like any other, labelled "(IR pass)": its rows run once each,
so its ``timing`` is that single run, not a measurement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional

from campaign.contract.cellfiles import PHASE_NAMES, Phases
from campaign.contract.status import SKIPPED

NOT_RECORDED = "not recorded"
NOT_RUN = "not run"


@dataclass(frozen=True)
class CellCost:
    task_id: str
    workload: str
    phases: Optional[Phases]             # None: no phase record
    wall_s: Optional[float]              # the runner's elapsed_s; None: not known
    state: str                           # the status row's rc_name, or NOT_RUN without one
    ir_pass: bool = False                # a screen's untimed IR pass (round 0): shown as such

    @property
    def ran(self) -> bool:
        return self.state not in (NOT_RUN, SKIPPED)


@dataclass(frozen=True)
class Line:
    scope: Literal["workload", "cell", "total"]
    name: str                            # workload, task id, or "total"
    state: str                           # a cell's state; empty for sums
    cells: int                           # cells that ran
    recorded: int                        # of those, with a phase record
    seconds: dict[str, Optional[float]]  # phase -> seconds; None: not recorded / not measured
    phases_s: Optional[float]
    wall_s: Optional[float]


def _sum(values: list[Optional[float]]) -> Optional[float]:
    # fsum: the correctly rounded sum, so a table does not depend on the Python that printed it
    # (3.12's sum() compensates, 3.11's does not: 160.70 there, 160.69 here for one H200 root's mm)
    return None if not values or any(v is None for v in values) else math.fsum(values)


def _line(scope, name: str, state: str, cells: list[CellCost]) -> Line:
    ran = [c for c in cells if c.ran]
    recorded = [c for c in ran if c.phases is not None]
    per_cell = [{p.name: p.seconds for p in c.phases.phases} for c in recorded]
    seconds = {name_: _sum([phases.get(name_) for phases in per_cell]) for name_ in PHASE_NAMES}
    walls = [c.wall_s for c in ran]
    return Line(scope=scope, name=name, state=state, cells=len(ran), recorded=len(recorded), seconds=seconds,
                phases_s=_sum(list(seconds.values())) if recorded else None,
                wall_s=_sum(walls) if walls else None)


def lines(cells: list[CellCost]) -> list[Line]:
    """Workload lines (in first-appearance order), then one line per cell, then the total."""
    workloads = list(dict.fromkeys(c.workload for c in cells))
    out = [_line("workload", w, "", [c for c in cells if c.workload == w]) for w in workloads]
    out += [_line("cell", c.task_id, c.state, [c]) for c in cells]
    out.append(_line("total", "total", "", cells))
    return out


def labels(cells: list[CellCost]) -> dict[str, list[str]]:
    """Phase -> the distinct labels the records give it, in order of appearance."""
    out: dict[str, list[str]] = {name: [] for name in PHASE_NAMES}
    for c in cells:
        for phase in (c.phases.phases if c.phases else ()):
            if phase.label not in out[phase.name]:
                out[phase.name].append(phase.label)
    return out


def _fmt(value: Optional[float], places: int) -> Optional[str]:
    return None if value is None else f"{value:.{places}f}"


def _md_cells(line: Line) -> list[str]:
    if line.scope == "cell" and line.state in (NOT_RUN, SKIPPED):
        return ["-"] * (len(PHASE_NAMES) + 2)            # the rc column says why
    missing = NOT_RECORDED if line.recorded == 0 else "not measured"
    values = [_fmt(line.seconds[name], 2) or missing for name in PHASE_NAMES]
    return [*values, _fmt(line.phases_s, 2) or missing, _fmt(line.wall_s, 2) or "-"]


def render_md(title: str, summary: str, cells: list[CellCost]) -> str:
    table = lines(cells)
    ir_pass = {c.task_id for c in cells if c.ir_pass}
    head = " | ".join(PHASE_NAMES)
    out = [f"# Cost of `{title}`", "", summary, "",
           "Seconds, summed over cells and rounds. `phases`: the worker's own record (phases.json), "
           "from its process start to its result; `wall`: the runner's elapsed time per cell "
           "(status.tsv), the process teardown included. `recorded`: cells with a phase record; "
           f"the sums cover those. \"{NOT_RECORDED}\": no cell of the line has one.", "",
           "## Per workload", "",
           f"| workload | cells | recorded | {head} | phases | wall |",
           "| --- | ---: | ---: |" + " ---: |" * (len(PHASE_NAMES) + 2)]
    for line in table:
        if line.scope != "cell":
            name = "**total**" if line.scope == "total" else line.name
            out.append(f"| {name} | {line.cells} | {line.recorded} | " + " | ".join(_md_cells(line)) + " |")
    out += ["", "## Per cell", "", f"| cell | rc | {head} | phases | wall |",
            "| --- | --- |" + " ---: |" * (len(PHASE_NAMES) + 2)]
    for line in table:
        if line.scope == "cell":
            name = f"{line.name} (IR pass)" if line.name in ir_pass else line.name
            out.append(f"| {name} | {line.state} | " + " | ".join(_md_cells(line)) + " |")
    out += ["", "## What each phase includes", ""]
    for name, texts in labels(cells).items():
        out.append(f"- `{name}`: {'; '.join(texts) if texts else NOT_RECORDED}")
    return "\n".join(out) + "\n"


TSV_COLUMNS = ("scope", "name", "state", "cells", "recorded", *PHASE_NAMES, "phases_s", "wall_s")


def render_tsv(cells: list[CellCost]) -> str:
    """One header, one row per workload, cell and the total; an empty field is not known."""
    rows = ["\t".join(TSV_COLUMNS)]
    for line in lines(cells):
        values = [line.scope, line.name, line.state, str(line.cells), str(line.recorded),
                  *(_fmt(line.seconds[name], 3) or "" for name in PHASE_NAMES),
                  _fmt(line.phases_s, 3) or "", _fmt(line.wall_s, 3) or ""]
        rows.append("\t".join(values))
    return "\n".join(rows) + "\n"

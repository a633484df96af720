"""FlagGems-vs-torch speedup per workload and cell side, from the reference rows.

FlagGems' own Benchmark times the torch op and then the FlagGems op, back to back, for each
shape and dtype (`campaign.plugins.flaggems_bench`): the torch side is a ``reference`` row,
never paired between cells (`campaign.judging.stats.keyed`), the FlagGems side the
``measured`` row after it. This is the earlier harness's summary beside the A/B verdict, not
part of it: per cell side, the median over its (reference, measured) pairs -- every shape,
dtype and round -- of torch latency / FlagGems latency (> 1: FlagGems faster).

A pair is the n-th reference row and the n-th measured row of one test, shape and dtype in
one cell, so a shape FlagGems' loop times twice stays two pairs. Only timed rows (status ok,
a positive latency) pair; on a backend that executes nothing there are none, and the section
says so instead of printing numbers. `pairs` is pure over rows; `section` is the edge that
reads a root's cells.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Mapping, Optional

from campaign.backends import get_backend
from campaign.contract.cellfiles import Row
from campaign.judging.evidence import RootEvidence

LABEL = ("torch latency / FlagGems latency from FlagGems' own Benchmark (its torch side: reference rows; its "
         "FlagGems side: measured rows, timed back to back in the same cell), median over the cell side's "
         "shapes, dtypes and rounds; > 1: FlagGems faster. Not part of the A/B verdict.")


def _timed(row: Row) -> bool:
    return row.status == "ok" and row.latency_ms is not None and row.latency_ms > 0 and row.timer != "none"


def pairs(rows: Iterable[Row]) -> list[float]:
    """torch / FlagGems latency ratios of one cell's rows (see the module docstring)."""
    by_role: dict[str, dict[tuple, list[Row]]] = {"reference": {}, "measured": {}}
    for row in rows:
        by_role[row.role].setdefault((row.test, tuple(row.shape), row.dtype), []).append(row)
    ratios = []
    for key, references in by_role["reference"].items():
        for reference, measured in zip(references, by_role["measured"].get(key, [])):
            if _timed(reference) and _timed(measured):
                ratios.append(reference.latency_ms / measured.latency_ms)
    return ratios


def summary(rows_by_side: Mapping[tuple[str, str], list[list[Row]]]) -> dict[str, dict[str, Optional[tuple[float, int]]]]:
    """(workload, cell) -> that side's cells' rows  =>  workload -> cell -> (median ratio, pairs) or
    None where the side has reference rows but no timed pair. Workloads without reference rows
    are left out: nothing of theirs is a FlagGems-vs-torch comparison."""
    out: dict[str, dict[str, Optional[tuple[float, int]]]] = {}
    for (workload, cell), cells in sorted(rows_by_side.items()):
        if not any(row.role == "reference" for rows in cells for row in rows):
            continue
        ratios = [ratio for rows in cells for ratio in pairs(rows)]
        out.setdefault(workload, {})[cell] = (statistics.median(ratios), len(ratios)) if ratios else None
    return out


def markdown(table: Mapping[str, Mapping[str, Optional[tuple[float, int]]]], cells: tuple[str, ...],
             executes: bool) -> list[str]:
    """The report's section (empty when no workload has reference rows)."""
    if not table:
        return []
    lines = ["## FlagGems vs torch", "", LABEL, ""]
    if not executes:
        return lines + ["Not timed: this backend executes nothing (compile-only), so there is no speedup to show; "
                        f"the reference rows of {', '.join(sorted(table))} were compiled, not timed.", ""]
    lines += ["| workload | " + " | ".join(cells) + " |", "|" + " --- |" * (len(cells) + 1)]
    for workload, sides in table.items():
        shown = []
        for cell in cells:
            value = sides.get(cell)
            shown.append("—" if cell not in sides else "not timed" if value is None else f"{value[0]:.3f}× (n={value[1]})")
        lines.append(f"| {workload} | " + " | ".join(shown) + " |")
    return lines + [""]


def section(ev: RootEvidence) -> list[str]:
    """The section for a root's evidence, the same evidence the verdicts were derived from (a
    workload whose caliber is refused has no rows read, and shows no speedup either)."""
    by_side: dict[tuple[str, str], list[list[Row]]] = {}
    for t in ev.tasks.values():
        if t.rows is not None:
            by_side.setdefault((t.task.workload, t.task.cell), []).append(list(t.rows))
    return markdown(summary(by_side), tuple(ev.matrix.cells), get_backend(ev.matrix.backend).capabilities.executes)

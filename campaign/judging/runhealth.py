"""What a finished run amounts to, from its status rows: pure over the last row of each task.

A workload none of whose cells ran (every finished, unskipped cell failed) is not a success:
the run exits 3 when every cell of the run failed preflight (nothing was wrong with the code
measured: the machine, the versions or the target were), 1 otherwise. The root is sealed
either way, so the evidence is kept and `campaign report` can say why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from campaign.contract.errors import EXIT_OK, EXIT_PREFLIGHT, EXIT_REFUSED, RUN_FAILED
from campaign.contract.runroot import RunRoot
from campaign.contract.status import SKIPPED, StatusRow


@dataclass(frozen=True)
class RunHealth:
    exit_code: int
    line: str          # the last line a run prints; empty when every workload had a cell that ran


def _detail(row: StatusRow) -> str:
    what = f"check={row.preflight_failed}" if row.preflight_failed else f"rc {row.rc} {row.rc_name}"
    return f"{row.task_id}: {what}"


def health(rows: Mapping[str, StatusRow], root: RunRoot) -> RunHealth:
    """``rows``: task id -> its last status row of the run in ``root``."""
    by_workload: dict[str, list[StatusRow]] = {}
    for row in rows.values():
        if row.rc_name != SKIPPED:
            by_workload.setdefault(row.workload, []).append(row)
    dead = sorted(name for name, cells in by_workload.items() if cells and all(r.failed for r in cells))
    if not dead:
        return RunHealth(EXIT_OK, "")
    ran = [row for cells in by_workload.values() for row in cells]
    first = by_workload[dead[0]][0]
    if all(row.preflight_failed for row in ran):
        checks = sorted({row.preflight_failed for row in ran})
        return RunHealth(EXIT_PREFLIGHT, f"{RUN_FAILED} check=preflight: every cell failed preflight ({len(ran)} cells; "
                         f"check {', '.join(checks)}; first {_detail(first)}): nothing was measured; the root is "
                         f"sealed with the evidence, `campaign report {root}` and each cell's run.log say why")
    return RunHealth(EXIT_REFUSED, f"{RUN_FAILED} check=cells: {len(dead)} of {len(by_workload)} workload(s) had no "
                     f"cell that ran ({', '.join(dead[:5])}{' …' if len(dead) > 5 else ''}; first "
                     f"{_detail(first)}); the root is sealed with the evidence, `campaign report {root}` says why")

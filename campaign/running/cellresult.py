"""The parent's reading of what a worker left in a cell folder: its one result file, a log's last line."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.contract import canonical, errorlines, faults, status
from campaign.contract.artifacts import RESULT_FILE, STDERR_LOG
from campaign.contract.cellfiles import CellResult
from campaign.contract.plans import Task
from campaign.contract.status import StatusRow
from campaign.running.cellproc import Ended


def read_result(path: Path) -> tuple[Optional[CellResult], str]:
    """The worker's one result file, or why there is none; a missing file is a row, never a crash."""
    if not path.is_file():
        return None, "no result.json"
    try:
        return CellResult.model_validate(canonical.read_json(path)), ""
    except (ValueError, OSError) as exc:
        return None, f"result.json unreadable: {str(exc).splitlines()[0][:200]}"


def tail(path: Path) -> str:
    """The log's last error line, else its last line (`campaign.contract.errorlines`)."""
    try:
        line = errorlines.last_error_line(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return f"{path.name} unreadable"
    return f"{path.name}: {line}" if line else f"{path.name} empty"


def status_row(task: Task, cell_dir: Path, ended: Ended, elapsed: float, window) -> StatusRow:
    """The status row of a cell whose worker has ended: how it ended, what its result file says, the
    telemetry of its window; a missing or unreadable result.json is a row saying so, never a crash.
    A worker that exited on a write fault gets no row: its OSError, for the run to stop on (`campaign.contract.faults`)."""
    if ended.rc == faults.EXIT_WRITE_FAULT and ended.name == status.rc_name(faults.EXIT_WRITE_FAULT):
        try:
            log = (cell_dir / STDERR_LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            log = ""
        raise faults.from_worker(log, cell_dir)
    notes = list(ended.notes)
    result, problem = read_result(cell_dir / RESULT_FILE)
    name = ended.name
    if result is None:
        notes.append(f"{problem}; {tail(cell_dir / STDERR_LOG)}")
        if name == "ok":
            name = "no_result"
    else:
        if result.rc != ended.rc and ended.name not in ("timed_out", "killed", status.INTERRUPTED):
            notes.append(f"result.json says rc {result.rc}, the worker exited {ended.rc}")
        if result.note:
            notes.append(result.note)
        if result.rows.compiled:
            # rows_ok counts timed rows; a compile-only cell's rows, and a screen's IR-pass rows on
            # any backend, are launched for IR, never timed
            why = "compile-only" if task.timed else "IR pass: untimed"
            notes.append(f"{result.rows.compiled} rows compiled, not timed ({why})")
    preflight = ""
    if result is not None and not result.preflight.ok:
        preflight = result.preflight.failed_check or "unnamed"
    return StatusRow(
        task_id=task.id, round=task.round, workload=task.workload, cell=task.cell, rc=ended.rc,
        rc_name=name, elapsed_s=round(elapsed, 3),
        rows_ok=result.rows.ok if result else None, rows_failed=result.rows.failed if result else None,
        markers=dict(result.markers) if result else None, preflight_failed=preflight,
        sm_clock_min_mhz=window.sm_clock_min_mhz, sm_clock_median_mhz=window.sm_clock_median_mhz,
        temp_max_c=window.temp_max_c, note="; ".join(notes))

"""status.tsv: one row per cell as it ends, append-only, read back by resume and review.

Columns (tab-separated, header first)::

    task_id round workload cell rc rc_name elapsed_s rows_ok rows_failed
    AUTOTUNE_REPLAY_FALLBACK BENCHMARK_DIRECT_NO_CUDAGRAPH BENCHMARK_CAPTURE_POISONED
    preflight_failed sm_clock_min_mhz sm_clock_median_mhz temp_max_c note

- A workload run in a batch process (``defaults.workloads_per_process`` > 1, `campaign.running.batch`) has
  its own row like any cell, its note ending ``batch <nnnn>: workload <k> of <n> in its process``
  (``batches/<nnnn>/batch.json``); its elapsed_s runs from the end of the workload before it in that process
  (from the spawn for the first, which so carries the process start and imports).
- A screen's IR-pass cell run beside others on its card (IR-pass lanes, `campaign.running.batching.lanes`)
  has its note say ``IR pass lane <k> of <w> on its card`` (`lane_note`, read back by `lane_of`): its
  elapsed_s overlaps other cells', so a sum of such rows is more than the time that passed.
- An empty field means "not known" (no result.json, no telemetry, a skipped cell), never zero: the
  bookkeeping must not invent a count, nor mark a clean cell failed because a count was missing.
- ``rc_name`` names every outcome: ``ok``, ``timed_out`` (124: ended on SIGTERM after the timeout),
  ``killed`` (137: needed SIGKILL after the timeout), ``signal_<NAME>`` (the worker died by a signal on its
  own), ``interrupted`` (130: the runner was stopped), ``skipped`` (rc empty: adaptive rounds),
  ``no_result`` (the worker exited 0 but wrote no result.json), ``not_started`` (rc empty: the worker could
  not be started) and the worker's own codes.
- ``device`` (the card's uuid, ``cpu-virtual-<n>`` for the cpu backend's declared cards) is a last column
  written only by a run over several cards (`campaign.running.cards`): the header says which columns a file
  has, so a one-card root is written, and an old root read, exactly as before.
- ``card_failed`` (rc empty): the card a task was placed on failed its check or died before the task ran;
  history like ``interrupted``, never a finish -- the task runs again on resume, on the card `campaign run
  --devices` names.
- A task may have several rows: an ``interrupted`` row is history, not a finish; `run` re-runs that cell on
  resume and appends its new row. The row that counts for a task is its last one (`latest`).
- A worker killed by a signal (``signal_<NAME>``: the OOM killer, a person's ``kill -9``) may have died of
  something outside the cell, so its first such row does not settle the task: it is run once more
  (`settled`). A second death by a signal does: the same failure twice is deterministic, and its row says so
  (`campaign.contract.rownotes.noted`).
- An IR-pass cell in a lane of several that failed with a device out of memory (the worker's note,
  `campaign.contract.cellfiles.device_out_of_memory`), or was killed by a signal (the host's OOM killer ends
  a process the lanes' memory together outgrew), may have failed of the lanes together (`crowded`): its
  first such row does not settle it; it runs once more alone after the lanes (`run_alone`), and that row
  settles it, ok or failed.
"""
from __future__ import annotations

import os
import re
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, TypeVar

from campaign.contract import faults, regular
from campaign.contract.artifacts import MARKERS
from campaign.contract.cellfiles import device_out_of_memory
from campaign.contract.errors import WORKER_EXITS

COLUMNS = ("task_id", "round", "workload", "cell", "rc", "rc_name", "elapsed_s", "rows_ok", "rows_failed",
           *MARKERS, "preflight_failed", "sm_clock_min_mhz", "sm_clock_median_mhz", "temp_max_c", "note")
DEVICE_COLUMNS = (*COLUMNS, "device")

RC_TIMED_OUT = 124
RC_KILLED = 137
SIGNAL_PREFIX = "signal_"   # an rc name of a process that died by a signal: signal_SIGKILL (`rc_name`)
RC_INTERRUPTED = 130
INTERRUPTED = "interrupted"
SKIPPED = "skipped"
CARD_FAILED = "card_failed"
_UNFINISHED = (INTERRUPTED, CARD_FAILED)
T = TypeVar("T")
_APPEND = threading.Lock()     # the cards' runners share status.tsv: one append at a time

_WORKER_CODES = {int(code): name for code, (name, _) in WORKER_EXITS.items()}


@dataclass(frozen=True)
class StatusRow:
    task_id: str
    round: int
    workload: str
    cell: str
    rc: Optional[int]
    rc_name: str
    elapsed_s: Optional[float] = None
    rows_ok: Optional[int] = None
    rows_failed: Optional[int] = None
    markers: Optional[dict[str, int]] = None        # None: not known (no result.json)
    preflight_failed: str = ""
    sm_clock_min_mhz: Optional[float] = None
    sm_clock_median_mhz: Optional[float] = None
    temp_max_c: Optional[float] = None
    note: str = ""
    device: Optional[str] = None                    # the card's uuid; None: a one-card run

    @property
    def finished(self) -> bool:
        """Not interrupted, not left by a failed card; whether the row also settles its task (a first
        death by a signal does not) is for its history to say (`settled`)."""
        return self.rc_name not in _UNFINISHED

    @property
    def failed(self) -> bool:
        """Failed by evidence only: a non-zero rc, failed rows, a failed preflight, no result."""
        if self.rc_name == SKIPPED:
            return False
        return (self.rc != 0 or self.rc_name != "ok" or bool(self.rows_failed)
                or bool(self.preflight_failed))


def rc_name(rc: int, *, timed_out: bool = False) -> str:
    """Name an exit status; ``rc`` is Popen's (negative: died by that signal)."""
    if timed_out:
        return "killed" if rc in (RC_KILLED, -signal.SIGKILL) else "timed_out"
    if rc < 0:
        try:
            return f"{SIGNAL_PREFIX}{signal.Signals(-rc).name}"
        except ValueError:
            return f"{SIGNAL_PREFIX}{-rc}"
    return _WORKER_CODES.get(rc, f"exit_{rc}")


def shell_rc(rc: int) -> int:
    """Popen's negative signal status as a shell would print it (128 + N)."""
    return 128 - rc if rc < 0 else rc


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return " ".join(str(value).split("\t")).replace("\r", " ").replace("\n", " | ")


def format_row(row: StatusRow, device: bool = False) -> str:
    markers = row.markers
    values = [row.task_id, row.round, row.workload, row.cell, row.rc, row.rc_name, row.elapsed_s,
              row.rows_ok, row.rows_failed,
              *((markers.get(name, 0) if markers is not None else None) for name in MARKERS),
              row.preflight_failed, row.sm_clock_min_mhz, row.sm_clock_median_mhz, row.temp_max_c, row.note]
    if device:
        values.append(row.device)
    return "\t".join(_cell(value) for value in values) + "\n"


def header(device: bool = False) -> str:
    return "\t".join(DEVICE_COLUMNS if device else COLUMNS) + "\n"


def append(path: Path, row: StatusRow) -> None:
    """Append one row with a single write; the header comes with the first row.

    A line torn by a killed runner (no newline at the end) is closed first, so
    the new row starts its own line; `parse` reports the torn one.
    """
    with _APPEND, faults.naming(path):   # os.write and fsync report no path; a full disk must name this file
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                line = header(row.device is not None) + format_row(row, row.device is not None)
            else:
                with open(path, "rb") as handle:
                    device = handle.readline() == header(True).encode("utf-8")
                    handle.seek(size - 1)
                    line = ("" if handle.read(1) == b"\n" else "\n") + format_row(row, device)
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def _opt(text: str, kind: Callable[[str], T]) -> Optional[T]:
    return kind(text) if text != "" else None


def parse(text: str) -> tuple[list[StatusRow], list[str]]:
    """Rows, and lines that are not rows (a torn write, a foreign header) for reporting."""
    rows: list[StatusRow] = []
    bad: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    columns = DEVICE_COLUMNS if lines and lines[0] == header(True).rstrip("\n") else COLUMNS
    for number, line in enumerate(lines, start=1):
        if number == 1 and line == header(columns is DEVICE_COLUMNS).rstrip("\n"):
            continue
        parts = line.split("\t")
        if len(parts) != len(columns):
            bad.append(f"line {number}: {len(parts)} fields, expected {len(columns)}: {line[:120]}")
            continue
        value = dict(zip(columns, parts))
        try:
            markers = None if value[MARKERS[0]] == "" else {name: int(value[name]) for name in MARKERS}
            rows.append(StatusRow(
                task_id=value["task_id"], round=int(value["round"]), workload=value["workload"],
                cell=value["cell"], rc=_opt(value["rc"], int), rc_name=value["rc_name"],
                elapsed_s=_opt(value["elapsed_s"], float), rows_ok=_opt(value["rows_ok"], int),
                rows_failed=_opt(value["rows_failed"], int), markers=markers,
                preflight_failed=value["preflight_failed"],
                sm_clock_min_mhz=_opt(value["sm_clock_min_mhz"], float),
                sm_clock_median_mhz=_opt(value["sm_clock_median_mhz"], float),
                temp_max_c=_opt(value["temp_max_c"], float), note=value["note"], device=value.get("device")))
        except ValueError as exc:
            bad.append(f"line {number}: {exc}: {line[:120]}")
    return rows, bad


def read(path: Path) -> tuple[list[StatusRow], list[str]]:
    """The ledger's rows and bad lines; none when there is no ledger. One that is no regular file (a
    FIFO, a device, a link) raises `regular.NotRegular` unopened: read as empty, a run would set every
    finished cell aside, and a FIFO would hang it."""
    if not os.path.lexists(path):
        return [], []
    # bytes that are not UTF-8 (a disk error, a foreign file) make their line unreadable, never the ledger
    return parse(regular.read_regular(path).decode("utf-8", errors="replace"))


def latest(rows: Iterable[StatusRow]) -> dict[str, StatusRow]:
    """Task id -> the row that counts for it (its last)."""
    out: dict[str, StatusRow] = {}
    for row in rows:
        out[row.task_id] = row
    return out


def with_evidence(rows: Iterable[StatusRow]) -> set[str]:
    """Task ids whose last row is finished and not skipped: a cell folder the verdicts read."""
    return {task_id for task_id, row in latest(rows).items() if row.finished and row.rc_name != SKIPPED}


def signal_of(name: str) -> Optional[str]:
    """The signal an rc name (`rc_name`) says its process died by (``SIGKILL``); None: it did not die by one."""
    return name[len(SIGNAL_PREFIX):] if name.startswith(SIGNAL_PREFIX) else None


def killed_by_signal(row: StatusRow) -> bool:
    return signal_of(row.rc_name) is not None


def crowded(row: StatusRow) -> Optional[int]:
    """The lanes (more than one) beside which ``row`` failed of what lanes share: killed by a signal, or a device OOM."""
    lane = lane_of(row)
    return lane[1] if lane is not None and lane[1] >= 2 and killed_by_signal(row) else in_lanes_out_of_memory(row)


def in_lanes_out_of_memory(row: StatusRow) -> Optional[int]:
    """The lanes (more than one) beside which ``row`` failed with a device out of memory; None: no such failure."""
    lane = lane_of(row)
    if lane is None or lane[1] < 2 or not row.finished or not row.failed or killed_by_signal(row):
        return None
    return lane[1] if row.rc_name not in ("timed_out", "killed") and device_out_of_memory(row.note) else None


def settled(rows: Iterable[StatusRow]) -> dict[str, StatusRow]:
    """Task id -> the row that settles it; a task absent here is run (again).

    Not settled: a last row ``interrupted``, or a last row of the task's first death by a signal
    (retried once; alone where it died beside other lanes: `run_alone`), or of its first device
    out-of-memory error beside other lanes (retried once, alone). A later row of the task replaces each.
    """
    out: dict[str, StatusRow] = {}
    died: set[str] = set()
    crowded_before: set[str] = set()
    for row in rows:
        killed, out_of_memory = killed_by_signal(row), in_lanes_out_of_memory(row) is not None
        retry = (killed and row.task_id not in died) or (out_of_memory and row.task_id not in crowded_before)
        if killed:
            died.add(row.task_id)
        if out_of_memory:
            crowded_before.add(row.task_id)
        if row.finished and not retry:
            out[row.task_id] = row
        else:
            out.pop(row.task_id, None)
    return out


def run_alone(rows: Iterable[StatusRow], done: Optional[Mapping[str, StatusRow]] = None) -> set[str]:
    """Task ids not settled that failed beside other lanes (`crowded`): they run again alone on the
    card, after its lanes (`campaign.running.runner.Runner`), never in a lane, until a row settles them --
    an interrupted retry, or a killed runner, leaves the task here for the resumed run. ``done``: the
    rows' `settled` where the caller holds it already."""
    rows = list(rows)
    done = settled(rows) if done is None else done
    return {row.task_id for row in rows if row.task_id not in done and crowded(row) is not None}


_LANE = re.compile(r"IR pass lane (\d+) of (\d+) on its card")


def lane_note(lane: int, lanes: int) -> str:
    """The note of a row that ran in IR-pass lane ``lane`` (0-based) of ``lanes``."""
    return f"IR pass lane {lane + 1} of {lanes} on its card"


def lane_of(row: StatusRow) -> Optional[tuple[int, int]]:
    """(lane, lanes) of a row that ran in an IR-pass lane, 1-based as written; None: it ran alone."""
    found = _LANE.search(row.note or "")
    return None if found is None else (int(found.group(1)), int(found.group(2)))

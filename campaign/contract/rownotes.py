"""What a status row's note says of its task's history (`campaign.contract.status`): the runner writes
each row through `noted` as it records it, so status.tsv, `campaign report` and `campaign cost` say why a
row did not settle its task -- a first death by a signal, a first device out of memory beside other
IR-pass lanes, a failure under a harness changed since prepare (`harness_changed`) -- and what became of
the task's next attempt."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from campaign.contract import status
from campaign.contract.cellfiles import device_out_of_memory
from campaign.contract.status import StatusRow


def noted(row: StatusRow, earlier: Iterable[StatusRow]) -> StatusRow:
    """``row`` with its note saying what a death by a signal, or a device out-of-memory error, beside other
    lanes means, given the task's ``earlier`` rows; ``row`` carries its lane note already (`status.lane_note`)."""
    earlier = [r for r in earlier if r.task_id == row.task_id]
    crowded = next((lanes for lanes in map(status.in_lanes_out_of_memory, earlier) if lanes is not None), None)
    killed_beside = next((lanes for lanes in (status.crowded(r) for r in earlier if status.killed_by_signal(r)) if lanes), None)
    lanes = status.in_lanes_out_of_memory(row)
    why = ""
    if crowded is not None:
        why = f"run again alone on its card after a device out of memory with {crowded} lanes"
        if device_out_of_memory(row.note) and row.failed:
            why += "; out of memory again: final, not retried again"
    elif lanes is not None:
        why = f"device out of memory with {lanes} lanes on the card; run again alone after the lanes"
    elif killed_beside is not None and not status.killed_by_signal(row):
        why = f"run again alone after a death by a signal beside {killed_beside} lanes"
    if why:
        row = replace(row, note="; ".join(part for part in (row.note, why) if part))
    if not status.killed_by_signal(row):
        return row
    first = next((r for r in earlier if status.killed_by_signal(r)), None)
    signal_name, beside = status.signal_of(row.rc_name), status.crowded(row)
    if first is None and beside:
        why = (f"killed by {signal_name} beside {beside} lanes: run once more alone after the lanes (a kill may come "
               "from outside the cell: the host's out-of-memory killer ends a process the lanes' memory together outgrew)")
    elif first is None:
        why = f"killed by {signal_name}: run once more (a kill may come from outside the cell)"
    elif first.rc_name == row.rc_name:
        alone = ", alone" if killed_beside and not beside else ""
        why = f"killed by {signal_name} again{alone}: the same failure twice is deterministic; not retried again"
    else:
        why = f"killed by {status.signal_of(first.rc_name)}, then by {signal_name}: not retried again"
    return replace(row, note="; ".join(part for part in (row.note, why) if part))


HARNESS_CHANGED = "harness changed under the run"


def harness_changed(row: StatusRow, drift: str) -> StatusRow:
    """A failed cell's ``row`` when, at its end, the code was no longer the prepared code (``drift``:
    `campaign.running.runchecks.harness_drift`'s words): the failure is the harness's, not the workload's,
    so the row settles nothing (``interrupted``, its own ending kept in its note) and the cell runs again
    once the harness is put back (left changed, `campaign run` refuses: check=harness). On 2026-12-07 a
    device call emptied the tree a 16-lane whole-suite screen ran from: eight cells ended worker_crashed
    (``No module named 'campaign.plugins.outcomes'``) or preflight_failed (``check=plugin_plan``), rows
    that would have read as the switch breaking those workloads had the tree been put back and the root
    resumed. Error sides: a failure under the prepared harness costs one digest pass (about 1.5 s for the
    FlagGems suite's 515 harness files on 2 cores) and settles as before; a harness changed and put back
    while only cells that end ok ran is not seen here (the seal compares the tree as it is then)."""
    return replace(row, rc_name=status.INTERRUPTED, note="; ".join(part for part in (
        f"{HARNESS_CHANGED}: ended {row.rc_name} (rc {row.rc}) while {drift}; it settles nothing", row.note) if part))

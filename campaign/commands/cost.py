"""`campaign cost ROOT [--format md|tsv|json]`: where a root's seconds went, per workload and phase.

Reads a root, sealed or not (a run still in progress included), and writes nothing:
matrix.json for the tasks, status.tsv for each cell's state and wall time, each cell's
phases.json for its phases (`campaign.reporting.cost`). Exit 2 when ROOT is not a run root (no
readable matrix.json). An unreadable phases.json is named on stderr and counts as not
recorded. ``--format json``: `campaign.contract.outputs.CostOutput` (schemas/cost.schema.json).

A sealed root copied without its cells (a receipt's top-level files, as committed) is said to be one: the
summary counts the sealed files absent here, so "not recorded" and a missing batch record read as absent from
this copy, not as never written.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Union

from campaign.contract import canonical, platforms, progresslines, receiptmodel, status
from campaign.contract.artifacts import BATCHES_DIR
from campaign.contract.cellfiles import Phases
from campaign.contract.errors import EXIT_OK
from campaign.contract.outputs import OUTPUT_VERSION, CostLine, CostOutput
from campaign.contract.runroot import RunRoot
from campaign.reporting import cost
from campaign.sealing import verification

Receipt = Union[receiptmodel.ReceiptV1, receiptmodel.Receipt]    # what `verification.read_receipt` reads

EXAMPLE = "example:\n  campaign cost runs/my-campaign-20261201T120000Z --format json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, help="a run root, sealed or not")
    parser.add_argument("--format", choices=("md", "tsv", "json"), default="md",
                        help="md: tables for a person (default); tsv: one header, one row per workload, cell and "
                             "total; json: the same lines (schemas/cost.schema.json)")


def main(args: argparse.Namespace) -> int:
    root = RunRoot(args.root)
    matrix = root.matrix
    rows, bad = root.status()
    for line in bad:
        print(f"note: {root.status_file}: {line}", file=sys.stderr)
    latest = status.latest(rows)
    cells = []
    for task in sorted(matrix.tasks, key=lambda t: t.order):
        row = latest.get(task.id)
        cells.append(cost.CellCost(
            task_id=task.id, workload=task.workload,
            phases=_phases(root, task.id),
            wall_s=row.elapsed_s if row is not None else None,
            state=(row.rc_name or cost.NOT_RUN) if row is not None else cost.NOT_RUN, ir_pass=not task.timed))
    if args.format == "tsv":
        sys.stdout.write(cost.render_tsv(cells))
        return EXIT_OK
    if args.format == "json":
        sys.stdout.write(canonical.dumps(_json(root, cells).model_dump(mode="json")))
        return EXIT_OK
    sealed = "sealed" if root.sealed else "not sealed"
    ran = sum(c.ran for c in cells)
    summary = (f"Campaign `{matrix.campaign}`, backend {matrix.backend}, {sealed}: {len(matrix.tasks)} cells "
               f"in the matrix, {ran} ran, {sum(c.ran and c.phases is not None for c in cells)} with phases recorded.")
    receipt = verification.read_receipt(root)[0] if root.sealed else None     # read once: it may be tens of MB
    absent = _absent(root, receipt)
    said = summary + _copy(absent) + _batching(root, absent) + _lanes(rows, matrix.backend) + _elapsed(root, receipt)
    sys.stdout.write(cost.render_md(root.name, said, cells))
    return EXIT_OK


def _absent(root: RunRoot, receipt: Optional[Receipt]) -> list[str]:
    """The files the receipt seals that this copy of the root lacks (none for an unsealed root, or a receipt
    that cannot be read: `campaign verify` names that)."""
    return [] if receipt is None else sorted(rel for rel in receipt.files if not os.path.lexists(root / rel))


def _copy(absent: list[str]) -> str:
    if not absent:
        return ""
    where = Counter(rel.partition("/")[0] + "/" if "/" in rel else "the top level" for rel in absent)
    return (f" This copy lacks {len(absent)} file(s) its receipt seals ("
            + ", ".join(f"{n} in {place}" for place, n in where.most_common())
            + "): phases, batch records and progress clocks among them are not read here, which says nothing of "
            "whether they were written (`campaign verify` names each).")


def _clock(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _elapsed(root: RunRoot, receipt: Optional[Receipt]) -> str:
    """The time that passed, which the summed cell seconds are not: from the freeze to the seal, and while the
    batch processes' cells ran (their progress records' clock; a cell outside a batch records no start)."""
    created = root.prepare.created_utc
    said = f" Prepared {created}"
    if root.sealed:
        sealed = receipt.sealed_utc if receipt is not None else str(
            canonical.read_json(root.receipt_file).get("sealed_utc", ""))
        if sealed:
            waited = (datetime.fromisoformat(sealed.replace("Z", "+00:00"))
                      - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()
            said += (f", sealed {sealed}: {_clock(waited)} from freeze to seal (any stop, and for a shard the "
                     "shards screened before it, included)")
    events = [e for p in sorted(root.batches_dir.glob("*/progress.tsv")) for e in progresslines.parse(
        p.read_text(encoding="utf-8", errors="replace"))]
    if events:
        first, last = min(e.unix for e in events), max(e.unix for e in events)
        said += (f". Cells in batch processes ran from their first start to their last end for {_clock(last - first)} "
                 f"({datetime.fromtimestamp(first, timezone.utc):%H:%M:%S} to "
                 f"{datetime.fromtimestamp(last, timezone.utc):%H:%M:%S} UTC)")
    return said + "."


def _json(root: RunRoot, cells: list[cost.CellCost]) -> CostOutput:
    ir_pass = {c.task_id for c in cells if c.ir_pass}
    lines = tuple(CostLine(scope=line.scope, name=line.name, state=line.state, cells=line.cells,
                           recorded=line.recorded, ir_pass=line.scope == "cell" and line.name in ir_pass,
                           seconds=line.seconds, phases_s=line.phases_s, wall_s=line.wall_s)
                  for line in cost.lines(cells))
    return CostOutput(schema_version=OUTPUT_VERSION, root=str(root.path), campaign=root.matrix.campaign,
                      backend=root.matrix.backend, sealed=root.sealed, lines=lines)


def _lanes(rows: list[status.StatusRow], backend: str) -> str:
    """What ran at once: IR-pass cells in lanes overlap, so their walls add up to more than passed. A compile-only
    root's lanes are the host's cores, compiling for the card it declares; no card was there."""
    widths = [found[1] for found in map(status.lane_of, rows) if found is not None]
    if not widths:
        return ""
    where = "on a card" if platforms.platform(backend).executes else "on this host's cores, compiling for its declared card"
    return (f" IR-pass cells ran up to {max(widths)} at once {where} (IR-pass lanes): "
            "their walls overlap, so the `wall` sums of those cells are more than the time that passed.")


def _phases(root: RunRoot, task_id: str) -> Optional[Phases]:
    record, why = root.phases(task_id)
    if why:
        print(f"note: {why}", file=sys.stderr)
    return record


def _batching(root: RunRoot, absent: list[str]) -> str:
    """What shared a process: the batches' bound and who chose it (batches/*/batch.json)."""
    records, notes = root.batches()
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if not records and any(rel.startswith(BATCHES_DIR + "/") for rel in absent):
        return " Batch processes ran, and their records are not in this copy."
    if not records:
        return " No batch process ran: every cell had a worker process of its own."
    bounds = sorted({(r.bound, r.bound_by) for r in records if r.bound is not None})
    said = ", ".join(f"{b} ({'the runner' if by == 'runner' else 'the manifest'}'s bound)" for b, by in bounds)
    return (f" {len(records)} batch process(es) ran {len({t for r in records for t in r.tasks})} cells, "
            f"up to {said or 'a bound not recorded'} workloads of one side each; every other cell had a process "
            "of its own (`start` and `imports` are paid once per process, by its first workload).")

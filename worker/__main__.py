"""``python -m campaign.worker TASK_JSON RESULT_JSON``: run one cell, write one result file
(`campaign.worker.runcell`). ``--batch BATCH_JSON``: several cells of one side in sequence, each
exactly as one: `campaign.worker.batch`.

The runner writes task.json (`CellPlan`), starts this with an explicit argv and the
env of `campaign.running.cellenv.cell_env`, redirects stdout/stderr to the cell's logs
and reads exactly RESULT_JSON afterwards. Nothing is reported on stdout. The exit status is the
result's rc (`campaign.contract.errors.WorkerExit`); 64 for unusable arguments.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

from campaign.contract.errors import WorkerExit
from campaign.worker import batch, lifeline
from campaign.worker.runcell import run_cell

USAGE = "usage: python -m campaign.worker TASK_JSON RESULT_JSON | --batch BATCH_JSON"
BATCH_FLAG = "--batch"


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    started = time.monotonic()
    unbound = lifeline.bind_to_parent()   # first: a worker outliving a killed runner runs with no timeout
    notes = [unbound] if unbound else []
    if len(argv) == 2 and argv[0] == BATCH_FLAG:
        return batch.run(Path(argv[1]).resolve(), started, notes)
    if len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return WorkerExit.USAGE
    return run_cell(Path(argv[0]).resolve(), Path(argv[1]).resolve(), started, notes)


if __name__ == "__main__":
    sys.exit(main())

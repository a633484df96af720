"""A pytest plugin of the worker's sessions: the first write fault (`campaign.contract.faults.WRITE_ERRNOS`)
any test, collector or hook met -- a full scratch dir under Triton's cache, a rows file on a full disk.

pytest makes such an error a failed test or an internal error, which would read as the cell's own
failure (``tests_failed``) and be final; seen here, the worker exits on it instead
(`campaign.worker.runcell.run_cell`) and the runner stops with the fault named, the cell left to run again.
"""
from __future__ import annotations

from typing import Optional

from campaign.contract import faults


class WriteFaults:
    def __init__(self) -> None:
        self.first: Optional[OSError] = None

    def note(self, exc: Optional[BaseException]) -> None:
        if self.first is None:
            self.first = faults.write_fault(exc)

    def pytest_exception_interact(self, node, call, report) -> None:
        self.note(getattr(call.excinfo, "value", None))

    def pytest_internalerror(self, excrepr, excinfo) -> None:
        self.note(getattr(excinfo, "value", None))

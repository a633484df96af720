"""A pytest plugin of the worker's benchmark session: the first device out-of-memory error a test met
(`campaign.contract.cellfiles.device_out_of_memory`: torch's ``CUDA out of memory``, ``HIP out of memory``).

pytest keeps a failed test's exception in its report, which no file of the cell holds; the worker
writes the line into its result's note (`campaign.worker.runcell.Cell.result`), so the cell's status
row carries it, and the runner can tell a cell that ran out of device memory beside other IR-pass
lanes (run again alone: `campaign.contract.status.settled`) from one that failed of itself. A
measured call's error that became a failed row instead is read from rows.json
(`campaign.worker.cell.rows_out_of_memory`).
"""
from __future__ import annotations

from typing import Optional

from campaign.contract import cellfiles, timers


class DeviceMemory:
    def __init__(self) -> None:
        self.first: Optional[str] = None

    def pytest_exception_interact(self, node, call, report) -> None:
        exc = getattr(call.excinfo, "value", None)
        if self.first is None and exc is not None:
            self.first = cellfiles.device_out_of_memory(timers.error_text(exc))

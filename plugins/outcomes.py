"""outcomes.json: the pytest outcome of every correctness node (`campaign.contract.cellfiles.Outcomes`).

Built only for the correctness session: a benchmark node passing says nothing
about whether results are correct. One node, one outcome -- the worst of its
phases: a failing setup or teardown is ``error``, a failing call ``failed``. A file
that does not import is an ``error`` row for the collector, never zero rows, so a
broken test file cannot read as "nothing failed". An xfail counts as skipped (it
is not evidence of correctness) with its reason in the detail.

The file is written once at session end; on a backend that executes nothing the
worker writes the ``not_run`` form instead (`write_not_run`).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from campaign.contract.artifacts import OUTCOMES_FILE
from campaign.contract.canonical import write_json_new
from campaign.contract.cellfiles import Outcome, Outcomes

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_DETAIL_CHARS = 500


def _detail(report) -> str | None:
    if report.outcome == "skipped":
        longrepr = report.longrepr
        # a skip's longrepr is (file, line, "Skipped: reason")
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        wasxfail = getattr(report, "wasxfail", None)
        return f"xfail: {wasxfail}" if wasxfail is not None else reason
    if report.outcome == "failed":
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            first = (crash.message.splitlines() or [""])[0]
            return f"{first} ({Path(crash.path).name}:{crash.lineno})"[:_DETAIL_CHARS]
        # collection errors carry text only: keep the last "E" line, the error itself
        lines = [line for line in report.longreprtext.splitlines() if line.strip()]
        errors = [line[1:].strip() for line in lines if line.startswith("E ")]
        return (errors or lines or [""])[-1][:_DETAIL_CHARS] or None
    return None


def _outcome(report) -> str:
    if report.outcome == "passed":
        return "passed"
    if report.outcome == "skipped":
        return "skipped"
    return "failed" if report.when == "call" else "error"


class OutcomesPlugin:
    def __init__(self, cell_dir: Path):
        self.path = Path(cell_dir) / OUTCOMES_FILE
        self.outcomes: dict[str, Outcome] = {}

    def _record(self, node: str, outcome: str, detail: str | None) -> None:
        current = self.outcomes.get(node)
        if current is None or _RANK[outcome] > _RANK[current.outcome]:
            self.outcomes[node] = Outcome(node=node, outcome=outcome, detail=detail)

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or report.outcome != "passed":
            self._record(report.nodeid, _outcome(report), _detail(report))

    def pytest_collectreport(self, report) -> None:
        if report.outcome == "failed":
            self._record(report.nodeid, "error", _detail(report))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        write_json_new(self.path, Outcomes(state="run", outcomes=tuple(self.outcomes.values())).model_dump(mode="json"))


def write_not_run(cell_dir: Path, reason: str) -> None:
    write_json_new(Path(cell_dir) / OUTCOMES_FILE,
                   Outcomes(state="not_run", reason=reason, outcomes=()).model_dump(mode="json"))


def make(ctx) -> OutcomesPlugin:
    return OutcomesPlugin(ctx.cell_dir)

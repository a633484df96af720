"""One cell's pytest sessions (arguments, the correctness session's dtype narrowing) and its
result, read back from the files the plugins wrote.

The readers are pure over the cell folder: each tolerates a missing or unreadable file by
returning zeros and a note, because a plugin that died must show up as missing
evidence in result.json, never as a worker crash that leaves no result at all.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

import pytest

from campaign.contract.artifacts import AUTOTUNE_FILE, INDEX_COLUMNS, INDEX_FILE, IR_DIR, OUTCOMES_FILE, ROWS_FILE
from campaign.contract.canonical import read_json
from campaign.contract.cellfiles import AutotuneFile, AutotuneSummary, Correctness, Outcomes, RowCounts, Rows, device_out_of_memory
from campaign.contract.fields import DTYPES
from campaign.contract.plans import CellPlan
from campaign.contract.timers import POISONED_MARKER

# -rs: pytest's summary names each skip's reason, what a screen's NO_ROWS says where a benchmark skipped itself
PYTEST_FLAGS = ("-p", "no:cacheprovider", "--color=no", "-q", "-rs")
AUTOTUNE_PLUGIN = "campaign.plugins.autotune"
NOT_EXECUTED = "compile-only backend: launches are not executed"
POISONED = f"not run: a graph capture poisoned this process's device context ({POISONED_MARKER})"
IR_PASS = "IR pass: untimed, correctness not run"


def correctness_not_run(markers: dict[str, int], executes: bool, timed: bool = True) -> Optional[str]:
    """Why the correctness session must not run after the benchmark session, or None.

    A poisoned capture leaves the process's device context unusable: nothing measured
    in it afterwards is evidence, correctness included, whatever the backend. An untimed
    task (a screen's IR pass) only decides whether the code changed; the timed round checks it."""
    if markers.get(POISONED_MARKER, 0):
        return POISONED
    if not timed:
        return IR_PASS
    if not executes:
        return NOT_EXECUTED
    return None


def pytest_args(nodes: list[str], plan: CellPlan, options: tuple[str, ...] = ()) -> list[str]:
    # a FlagGems checkout's items, and a test file of the user's own, run in their own pytest tree:
    # its configuration and conftest.py (the campaign's plugins are given to pytest.main as ever)
    root = plan.task.targets.checkout or plan.task.targets.rootdir or plan.project_root
    return [*nodes, *options, *PYTEST_FLAGS, f"--rootdir={root}"]


def benchmark_args(plan: CellPlan) -> list[str]:
    return pytest_args([plan.task.targets.benchmark], plan, plan.task.targets.benchmark_options)


def correctness_args(plan: CellPlan) -> list[str]:
    targets = plan.task.targets
    if targets.correctness_node_ids:
        return pytest_args(list(targets.correctness_node_ids), plan, targets.correctness_options)
    selector = ["-k", targets.correctness_k] if targets.correctness_k else []
    return pytest_args([targets.correctness, *selector], plan, targets.correctness_options)


def param_dtype(item) -> Optional[str]:
    """The dtype name of a node's ``dtype`` parameter (a torch dtype or its name), or None.

    ``dtype`` is the parameter name of the project's and FlagGems' correctness tests; a
    node without one, or with a value that is not a dtype, is never narrowed away."""
    value = getattr(getattr(item, "callspec", None), "params", {}).get("dtype")
    if type(value).__name__ == "dtype" and type(value).__module__ == "torch":
        return str(value).removeprefix("torch.")
    return value if isinstance(value, str) and value in DTYPES else None


class DtypeNarrowing:
    """Deselects correctness nodes whose ``dtype`` is outside the workload's narrowed dtypes."""

    def __init__(self, dtypes: tuple[str, ...], say: Callable[[str], None]):
        self.dtypes = dtypes
        self.say = say

    def pytest_collection_modifyitems(self, config, items) -> None:
        dropped = [item for item in items if param_dtype(item) not in (None, *self.dtypes)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            gone = {id(item) for item in dropped}
            items[:] = [item for item in items if id(item) not in gone]
        self.say(f"correctness: the workload narrows dtypes to {', '.join(self.dtypes)}: "
                 f"{len(dropped)} node(s) of other dtypes deselected, {len(items)} kept"
                 + ("" if items or not dropped else
                    " -- none left: nothing checks the measured dtypes (FlagGems' --quick runs mm's tests in "
                    "float32 only); the session exits 5 and the cell fails, never passes unchecked"))


class InCellDir:
    """Runs a session in the cell folder: FlagGems' tests/conftest.py writes ``result_<time>.json``
    into the working directory at every session's end, which must land in the cell, not the project."""

    def __init__(self, cell_dir: str):
        self.cell_dir = cell_dir
        self.before: Optional[str] = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config) -> None:
        self.before = os.getcwd()
        os.chdir(self.cell_dir)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config) -> None:
        if self.before is not None:
            os.chdir(self.before)


def correctness_plugins(plan: CellPlan, say: Callable[[str], None], ctx=None) -> list:
    """The correctness session's plugins besides outcomes; with the cell's context, the
    autotune plugin too, so correctness runs on the configs that were timed. The dtypes it
    keeps are the task's (`campaign.planning.matrix.correctness_dtypes`)."""
    dtypes = plan.task.correctness_dtypes
    if ctx is not None and AUTOTUNE_PLUGIN in plan.plugins:
        from campaign.plugins import autotune  # imports triton: only in a worker
        say("correctness: autotune " + ("records" if plan.task.autotune.mode == "record" else "replays")
            + " the configs of the correctness shapes")
        return [autotune.make(ctx, session="correctness"), *correctness_plugins(plan, say)]
    in_cell = [InCellDir(plan.cell_dir)] if plan.task.targets.checkout else []
    return in_cell + ([] if dtypes is None else [DtypeNarrowing(dtypes, say)])


def _load(path: Path, model):
    """(model, None) or (None, why not): a missing or malformed file is a note, not a crash."""
    if not path.is_file():
        return None, f"{path.name} missing"
    try:
        return model.model_validate(read_json(path)), None
    except Exception as exc:        # malformed JSON or a contract violation: both are evidence missing
        return None, f"{path.name} unreadable: {type(exc).__name__}: {str(exc).splitlines()[0]}"


def read_rows(cell_dir: Path) -> tuple[RowCounts, Optional[str]]:
    rows, note = _load(cell_dir / ROWS_FILE, Rows)
    if rows is None:
        return RowCounts(), f"{note}: zero rows"
    count = {status: sum(1 for row in rows.rows if row.status == status) for status in ("ok", "failed", "compiled")}
    return RowCounts(**count), None


def rows_out_of_memory(cell_dir: Path) -> Optional[str]:
    """The first failed row's error that names a device out-of-memory error
    (`campaign.contract.cellfiles.device_out_of_memory`); None: none does, or no rows file."""
    rows, _ = _load(cell_dir / ROWS_FILE, Rows)
    failed = (row.error for row in (rows.rows if rows else ()) if row.status == "failed")
    return next((line for line in map(device_out_of_memory, failed) if line), None)


def read_correctness(cell_dir: Path, session_rc: int) -> Correctness:
    outcomes, note = _load(cell_dir / OUTCOMES_FILE, Outcomes)
    if outcomes is None:
        return Correctness(state="not_run", reason=f"{note} after the correctness session (pytest rc={session_rc})")
    if outcomes.state == "not_run":
        return Correctness(state="not_run", reason=outcomes.reason)
    if not outcomes.outcomes:
        # nothing collected is not "nothing failed"
        return Correctness(state="not_run", reason=f"no correctness node ran (pytest rc={session_rc})")
    count = {kind: sum(1 for o in outcomes.outcomes if o.outcome == kind) for kind in ("passed", "failed", "error", "skipped")}
    return Correctness(state="run", passed=count["passed"], failed=count["failed"], errors=count["error"],
                       skipped=count["skipped"])


def read_autotune(cell_dir: Path) -> tuple[Optional[AutotuneSummary], Optional[str]]:
    recording, note = _load(cell_dir / AUTOTUNE_FILE, AutotuneFile)
    if recording is None:
        return None, note
    entries = len(recording.entries)
    return AutotuneSummary(mode=recording.mode, policy=recording.policy,
                           recorded=entries if recording.mode == "record" else 0,
                           injected=entries if recording.mode == "replay" else 0,
                           tuning_runs=recording.tuning_runs,
                           warmup_cold=sum(len(w.cold) for w in recording.warmup)), None


def read_index(cell_dir: Path) -> tuple[int, int, Optional[str]]:
    """(variants, launches, note) from ir/index.tsv."""
    path = cell_dir / IR_DIR / INDEX_FILE
    if not path.is_file():
        return 0, 0, f"{IR_DIR}/{INDEX_FILE} missing"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if rows and tuple(rows[0]) == INDEX_COLUMNS:
        rows = rows[1:]
    launches_at = INDEX_COLUMNS.index("launches")
    try:
        launches = sum(int(row[launches_at]) for row in rows)
    except (IndexError, ValueError):
        return 0, 0, f"{IR_DIR}/{INDEX_FILE} unreadable: expected columns {', '.join(INDEX_COLUMNS)}"
    return len(rows), launches, None

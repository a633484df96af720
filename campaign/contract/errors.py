"""The one error type a person sees, caught in one place (`campaign.cli`), and the exit codes.

Exit codes are part of the interface; `EXIT_CODES` is their one table (the README prints it
and `tests/flows/test_exit_codes.py` builds each case for real). A cell's worker process has its
own, `WorkerExit` and its table `WORKER_EXITS`: pytest's 0-5 pass through as the benchmark
session's, and the worker's own codes lie outside them, so a worker that crashed can never read as
a cell whose tests failed.
"""
from __future__ import annotations

import enum
from typing import Final, Literal, get_args

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_INPUT = 2
EXIT_PREFLIGHT = 3
EXIT_CALIBER = 4
EXIT_VERIFY = 5
EXIT_INTERRUPTED = 130

# code -> what it means, wherever a command exits with it
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done: every workload had a cell that ran (a failed cell is a row the verdicts read)",
    EXIT_REFUSED: "refused by a named check, or failed: a workload none of whose cells ran (the root is sealed, "
                  "the evidence kept), a lost card or canary; an unexpected error (its crash log named)",
    EXIT_INPUT: "bad usage or invalid input: a manifest, an option, a root that is not sealed where a sealed "
                "one is needed",
    EXIT_PREFLIGHT: "preflight failed in every cell of the run (the root is sealed, the evidence kept), or a "
                    "card failed its check",
    EXIT_CALIBER: "the cells' calibers differ (`--allow-caliber-mismatch` releases)",
    EXIT_VERIFY: "a sealed root does not verify against its receipt",
    EXIT_INTERRUPTED: "interrupted (SIGINT/SIGTERM); `campaign run ROOT` resumes",
}




class WorkerExit(enum.IntEnum):
    """A cell's worker process's exit status (`campaign.worker`), which is its result's rc."""
    OK = 0                  # pytest's: the benchmark session passed
    TESTS_FAILED = 1        # pytest's: some benchmark rows failed (judged by outcomes and rows)
    PYTEST_INTERRUPTED = 2  # pytest's
    PYTEST_INTERNAL = 3     # pytest's: an internal error of the session
    PYTEST_USAGE = 4        # pytest's: its arguments were refused
    NO_TESTS = 5            # pytest's: no test collected
    WRITE_FAULT = 6         # a full or read-only disk met by the worker: no result (`campaign.contract.faults`)
    USAGE = 64              # sysexits' EX_USAGE: an unusable argv, task or batch file; no result
    CRASH = 70              # sysexits' EX_SOFTWARE: the worker itself raised; a failure result is written
    REFUSED = 75            # the worker would not run: its result exists already, or its runner is gone
    PREFLIGHT_FAILED = 78   # sysexits' EX_CONFIG: a preflight check failed; a result names the check


# code -> (status.tsv's rc_name, what it means): the worker's table, one row a code
WORKER_EXITS: dict[WorkerExit, tuple[str, str]] = {
    WorkerExit.OK: ("ok", "the benchmark session passed"),
    WorkerExit.TESTS_FAILED: ("tests_failed", "pytest: some tests failed; the rows and outcomes say which"),
    WorkerExit.PYTEST_INTERRUPTED: ("pytest_interrupted", "pytest: the session was interrupted"),
    WorkerExit.PYTEST_INTERNAL: ("pytest_internal_error", "pytest: an internal error of the session"),
    WorkerExit.PYTEST_USAGE: ("usage_error", "pytest: its arguments were refused"),
    WorkerExit.NO_TESTS: ("no_tests_collected", "pytest: no test was collected"),
    WorkerExit.WRITE_FAULT: ("write_fault", "a write fault (a full or read-only disk): no result; the run stops"),
    WorkerExit.USAGE: ("worker_usage", "the worker's argv, task or batch file was unusable: no result"),
    WorkerExit.CRASH: ("worker_crashed", "the worker itself raised: a failure result; the cell is X, never a failed test"),
    WorkerExit.REFUSED: ("worker_refused", "the worker ran nothing: its result existed, or its runner was gone"),
    WorkerExit.PREFLIGHT_FAILED: ("preflight_failed", "a preflight check failed: a result naming the check"),
}
# Roots written before the worker had its own codes: a preflight failure exited 3 and is named so in
# their status.tsv, which is read as written; a worker crash exited 1 and reads as tests_failed there.

# A refusal's first word, ``<PREFIX> check=<name>: <detail>`` (`Refused`): one list, so a script can
# match them and a new one is added here (`tests/structure/test_vocabulary.py`)
RefusalPrefix = Literal["ATTEST_REFUSED", "COMPARE_REFUSED", "INVENTORY_REFUSED", "PREFLIGHT_FAILED",
                        "PREPARE_REFUSED", "REACCOUNT_REFUSED", "REPORT_REFUSED", "RUN_FAILED", "RUN_REFUSED",
                        "SCREEN_REFUSED", "SEAL_REFUSED", "VERIFY_FAILED", "VERIFY_REFUSED"]
ATTEST_REFUSED: Final = "ATTEST_REFUSED"
COMPARE_REFUSED: Final = "COMPARE_REFUSED"
INVENTORY_REFUSED: Final = "INVENTORY_REFUSED"
PREFLIGHT_FAILED: Final = "PREFLIGHT_FAILED"
PREPARE_REFUSED: Final = "PREPARE_REFUSED"
REACCOUNT_REFUSED: Final = "REACCOUNT_REFUSED"
REPORT_REFUSED: Final = "REPORT_REFUSED"
RUN_FAILED: Final = "RUN_FAILED"
RUN_REFUSED: Final = "RUN_REFUSED"
SCREEN_REFUSED: Final = "SCREEN_REFUSED"
SEAL_REFUSED: Final = "SEAL_REFUSED"
VERIFY_FAILED: Final = "VERIFY_FAILED"
VERIFY_REFUSED: Final = "VERIFY_REFUSED"
REFUSAL_PREFIXES: tuple[RefusalPrefix, ...] = get_args(RefusalPrefix)


class CampaignError(Exception):
    """A failure a person can act on: every line is printed, then the process exits."""

    def __init__(self, lines: str | list[str], exit_code: int = EXIT_REFUSED):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        self.exit_code = exit_code
        super().__init__("\n".join(self.lines))


class InputError(CampaignError):
    """Bad usage or invalid input (exit 2)."""

    def __init__(self, lines: str | list[str]):
        super().__init__(lines, EXIT_INPUT)


class Refused(CampaignError):
    """An action refused by a named check: ``<PREFIX> check=<name>: <detail>``."""

    def __init__(self, prefix: RefusalPrefix, check: str, detail: str, exit_code: int = EXIT_REFUSED):
        self.check = check
        self.detail = detail
        super().__init__(f"{prefix} check={check}: {detail}", exit_code)

"""The one error type a person sees, caught in one place (`campaign.cli`), and the exit codes.

Exit codes are part of the interface; `EXIT_CODES` is their one table (the README prints it
and `tests/flows/test_exit_codes.py` builds each case for real).
"""
from __future__ import annotations

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

    def __init__(self, prefix: str, check: str, detail: str, exit_code: int = EXIT_REFUSED):
        self.check = check
        self.detail = detail
        super().__init__(f"{prefix} check={check}: {detail}", exit_code)

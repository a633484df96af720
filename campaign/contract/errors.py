"""The one error type a person sees, caught in one place (`campaign.cli`).

Exit codes are part of the interface: 0 done; 1 refused or failed with a named
reason; 2 bad usage or invalid input; 3 preflight failed; 4 caliber mismatch;
5 digests do not verify; 130 interrupted.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_INPUT = 2
EXIT_PREFLIGHT = 3
EXIT_CALIBER = 4
EXIT_VERIFY = 5
EXIT_INTERRUPTED = 130


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

"""The line of a cell's log that says why it failed: what a report shows where nothing reached the
compiler or no row ran, and what a status row says of a worker that left no result.

A cell's stdout.log and stderr.log (`campaign.contract.artifacts`) are pytest's and Python's
output. The last line that looks like an error wins: pytest's ``E   RuntimeError: ...``, an
exception named with its message (``SomethingError: ...``, also inside pytest's ``FAILED ... -
RuntimeError: ...`` summary), pytest's ``ERROR ...`` lines, a tool's ``error: ...``. Where none
looks like one, pytest's skip summary (``SKIPPED [1] file.py:240: <reason>``, printed under ``-rs``,
which every cell's session passes) names why nothing ran, before the last non-empty line. Pure over the text; the reader passes only a
log's tail (``TAIL_BYTES``), and a line is cut to ``LIMIT`` characters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

LIMIT = 240
TAIL_BYTES = 64 * 1024
# pytest's failure lines: "E   <text>"
PYTEST_E = re.compile(r"^E\s+(?P<text>\S.*)$")
# an exception with its message, from its (dotted) name on: "torch.OutOfMemoryError: ...", "AssertionError: ..."
EXCEPTION = re.compile(r"(?P<text>\b[A-Za-z_][\w.]*(?:Error|Exception|Failure|Interrupt|Exit)\b:.*)$")
# pytest's collection/setup errors and a compiler's or tool's diagnostics
PLAIN = re.compile(r"^(?:ERROR\b.*|.*\b(?:error|fatal error|FATAL):\s.*)$")
# pytest's short summary of a skip (-rs): "SKIPPED [1] benchmark/test_fused_perf.py:240: Skipped due to ..."
SKIPPED = re.compile(r"^SKIPPED \[\d+\] \S.*$")


def error_text(line: str) -> Optional[str]:
    """The part of ``line`` that names the error; None when it does not look like one."""
    stripped = line.strip()
    for pattern in (PYTEST_E, EXCEPTION):
        found = pattern.search(stripped)
        if found:
            return found.group("text").strip()
    return stripped if PLAIN.match(stripped) else None


def cut(line: str, limit: int = LIMIT) -> str:
    return line if len(line) <= limit else line[:limit - 1] + "…"


def last_error(text: str, limit: int = LIMIT) -> Optional[str]:
    """The last error-looking line of ``text``, the error's own part of it; None where none looks like one."""
    for line in reversed(text.splitlines()):
        found = error_text(line)
        if found:
            return cut(found, limit)
    return None


def last_skip(text: str, limit: int = LIMIT) -> Optional[str]:
    """pytest's last skip summary line of ``text`` (its reason in it); None where it printed none."""
    for line in reversed(text.splitlines()):
        if SKIPPED.match(line.strip()):
            return cut(line.strip(), limit)
    return None


def is_skip(line: Optional["LogLine"]) -> bool:
    return line is not None and SKIPPED.match(line.text) is not None


def last_line(text: str, limit: int = LIMIT) -> Optional[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return cut(lines[-1], limit) if lines else None


def last_error_line(text: str, limit: int = LIMIT) -> Optional[str]:
    """The last error-looking line of ``text``, else its last non-empty line; None when it is empty."""
    return last_error(text, limit) or last_line(text, limit)


@dataclass(frozen=True)
class LogLine:
    """One log's line as a report shows it: which log, the line, and whether it looks like an error."""

    log: str
    text: str
    error: bool


def by_cells(lines: Mapping[str, Optional[LogLine]]) -> list[str]:
    """``last error line of baseline, candidate (stdout.log): ...``, once per distinct line, cells in order."""
    grouped: dict[LogLine, list[str]] = {}
    for cell, line in lines.items():
        if line is not None:
            grouped.setdefault(line, []).append(cell)
    return [f"last error line of {', '.join(cells)} ({line.log}): {line.text}" if line.error else
            f"last line of {', '.join(cells)} ({line.log}; no line looks like an error): {line.text}"
            for line, cells in grouped.items()]

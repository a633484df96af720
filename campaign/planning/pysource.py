"""A target's Python file read as a syntax tree, never imported: the one reader of the files a
workload's targets name (the project's, a FlagGems checkout's, a user's own anywhere on disk).

Whatever the file is, the answer is a tree or a `SyntaxError` with its line: a FIFO, a device or a
loop of links is refused unopened (`campaign.contract.regular`), a file over `SOURCE_CAP` unread,
bytes that are not UTF-8 and nesting past what the parser or the interpreter's stack can take are
named where they are, so every caller's ``except SyntaxError`` reports it instead of a traceback.
"""
from __future__ import annotations

import ast
from pathlib import Path

from campaign.contract import regular

SOURCE_CAP = 16 << 20      # a benchmark file of FlagGems is under 100 kB


def parse(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path`` (links followed: a checkout may hold them)."""
    try:
        raw = regular.read_regular(Path(path), SOURCE_CAP, follow=True)
    except (OSError, regular.TooLarge) as exc:
        raise SyntaxError(f"cannot be read: {getattr(exc, 'strerror', None) or exc}", (str(path), 1, 1, "")) from None
    try:
        return ast.parse(raw, filename=str(path))
    except (RecursionError, MemoryError):
        raise SyntaxError("nested too deeply to parse", (str(path), 1, 1, "")) from None
    except ValueError as exc:   # a NUL byte in the source
        raise SyntaxError(str(exc), (str(path), 1, 1, "")) from None

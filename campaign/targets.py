"""Resolve pytest targets by reading files, never by importing them.

Importing a benchmark file would import flag_gems and triton at prepare time; a
target that does not resolve must be refused before anything runs, with the
file and function named.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=None)
def _functions(path: Path, mtime_ns: int) -> frozenset[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return frozenset(node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def module_functions(path: Path) -> frozenset[str]:
    return _functions(path, path.stat().st_mtime_ns)


def split(target: str) -> tuple[str, str | None]:
    """"file.py::function[param]" -> ("file.py", "function")."""
    file_part, _, rest = target.partition("::")
    function = rest.split("[", 1)[0] or None
    return file_part, function


def problem(project_root: Path, target: str) -> str | None:
    """None when ``target`` resolves; otherwise what is missing."""
    file_part, function = split(target)
    path = Path(project_root) / file_part
    if not path.is_file():
        return f"{file_part}: no such file"
    try:
        names = module_functions(path)
    except SyntaxError as exc:
        return f"{file_part}:{exc.lineno}: does not parse: {exc.msg}"
    if function is not None and function not in names:
        return f"{file_part}: no function {function}"
    return None

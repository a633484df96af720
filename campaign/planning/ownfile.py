"""A test file of the user's own, anywhere on disk: its pytest rootdir and everything pytest reads with it.

A ``provider: pytest`` workload whose benchmark is absolute or starts with ``./`` or ``../``
(`campaign.contract.workloads.own_path`, relative to the manifest's folder) is not a file of the
project. Its cells run ``pytest FILE --rootdir=ROOTDIR``, ROOTDIR found by pytest's own rule
(`rootdir`), so its configuration and conftest.py chain are its own and its folder is on
``sys.path`` (pytest's default import mode), while the campaign's plugins are loaded as for any cell.

What prepare digests with it, as harness files (`campaign.planning.harness`; ``run`` and the seal
compare the same paths again): the file, every pytest configuration and conftest.py from the
rootdir down to its folder, the modules they import that resolve to a file in the file's (or a
conftest's) base folder or the rootdir, followed recursively (`campaign.planning.targetfiles`,
with the rootdir as the root), and the data files the workload lists. An import that resolves to
none of those is an installed package (torch, triton) or code prepare cannot see: it is named in a
note (`unresolved`), never digested silently.
"""
from __future__ import annotations

import ast
import configparser
import re
import sys
from pathlib import Path
from typing import Iterable

from campaign.planning import pysource, targetfiles

ALWAYS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini")   # pytest configuration whatever they hold
SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}
PYPROJECT_TABLE = re.compile(r"^\s*\[\s*tool\.pytest(\.ini_options)?\s*\]", re.MULTILINE)   # tomllib is 3.11+


def locate(manifest_path: Path, file_part: str) -> Path:
    """The file ``file_part`` names: as written when absolute, else relative to the manifest's folder."""
    given = Path(file_part).expanduser()
    joined = given if given.is_absolute() else Path(manifest_path).resolve().parent / given
    try:
        return joined.resolve()
    except (OSError, RuntimeError):    # a loop of links (RuntimeError before 3.13), a name too long:
        return joined                  # named by whoever reads it (`campaign.contract.regular.not_regular`)


def absolute(manifest_path: Path, target: str) -> str:
    """``./k.py::test_x[a]`` -> ``/abs/k.py::test_x[a]``: what the task and prepare.json hold."""
    file_part, sep, rest = target.partition("::")
    return f"{locate(manifest_path, file_part)}{sep}{rest}"


def _holds_pytest_config(path: Path) -> bool:
    if path.name in ALWAYS:
        return True
    try:
        if path.name == "pyproject.toml":
            return PYPROJECT_TABLE.search(path.read_text(encoding="utf-8")) is not None
        parser = configparser.RawConfigParser()
        parser.read_string(path.read_text(encoding="utf-8"))
        return parser.has_section(SECTIONS[path.name])
    except (OSError, UnicodeDecodeError, ValueError, configparser.Error):
        return False


def rootdir(file: Path) -> Path:
    """pytest's rootdir for ``pytest FILE`` (its ``locate_config``): the first folder up from the
    file's holding pytest configuration; else the first holding a pyproject.toml; else the first
    holding a setup.py; else the file's own folder."""
    folders = (file.parent, *file.parent.parents)
    for folder in folders:
        if any(_holds_pytest_config(folder / name) for name in (*ALWAYS, "pyproject.toml", *SECTIONS)
               if (folder / name).is_file()):
            return folder
    for marker in ("pyproject.toml", "setup.py"):
        found = next((folder for folder in folders if (folder / marker).is_file()), None)
        if found is not None:
            return found
    return file.parent


def relative(pytest_root: Path, target: str) -> str:
    """An absolute target as pytest names it under ``pytest_root``: ``k.py::test_x``."""
    file_part, sep, rest = target.partition("::")
    return f"{Path(file_part).relative_to(pytest_root).as_posix()}{sep}{rest}"


def reads(pytest_root: Path, targets: Iterable[str], data: Iterable[str] = ()) -> set[Path]:
    """Every path a cell of these absolute targets under ``pytest_root`` may read, existing or not, and the
    listed data files (a file that appears at one of them after prepare is a change)."""
    relative_targets = [relative(pytest_root, target) for target in targets if target.endswith(".py") or ".py::" in target]
    return targetfiles.candidates(pytest_root, relative_targets) | {Path(path) for path in data}


def _imported_names(file: Path) -> list[tuple[int, str]]:
    """(level, dotted name) of each import statement's module, in order; ``from . import x`` gives (1, "x")."""
    try:
        tree = pysource.parse(file)
    except (SyntaxError, ValueError, OSError):
        return []
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += ([(node.level, node.module)] if node.module
                      else [(node.level, alias.name) for alias in node.names])
    return found


def unresolved(pytest_root: Path, read: set[Path]) -> tuple[str, ...]:
    """The imports of the read .py files that resolve to no file prepare digests: installed packages
    or code it cannot see (a computed import is not seen at all), top-level names, sorted; the
    standard library's are left out (the interpreter's, whose version the run records)."""
    existing = {path for path in read if path.is_file()}
    names: set[str] = set()
    for file in sorted(path for path in existing if path.suffix == ".py"):
        searched = [targetfiles.base_folder(pytest_root, file), pytest_root]
        for level, dotted in _imported_names(file):
            if level:
                package = file.parents[level - 1]
                candidates = targetfiles.module_paths(package, dotted)
            else:
                candidates = [p for folder in searched for p in targetfiles.module_paths(folder, dotted)]
            top = dotted.split(".")[0]
            if not any(path in existing for path in candidates) and (level or top not in sys.stdlib_module_names):
                names.add("." * level + (top if not level else dotted))
    return tuple(sorted(names))

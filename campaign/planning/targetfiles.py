"""What a cell's pytest session reads from the project besides the harness: found by reading files.

The worker runs ``pytest TARGET --rootdir=<project>`` with the project as its working
directory. Besides the target file itself, pytest then reads its configuration (the
first of pytest.ini, pyproject.toml, tox.ini, setup.cfg in the targets' folder or
above), every conftest.py from the rootdir down to the target's folder, and whatever
modules those files import: first from the target's base folder (the first folder up
without an ``__init__.py``, which pytest's default import mode puts on ``sys.path``),
then from the project root (the worker's working directory).

`candidates` lists each of these paths whether or not the file exists: a conftest.py
or a shadowing module that appears after prepare is then a file *added* since
prepare, which `campaign.planning.harness` reports like any change. Only files that exist are
read further; nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, Optional

from campaign.planning import pysource

PYTEST_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
CONFTEST = "conftest.py"
MAX_FILES = 5000   # an import walk larger than any project is a loop or a vendored tree


def inside(project_root: Path, path: Path) -> bool:
    """Whether ``path``, symbolic links resolved, lies within the project."""
    try:
        Path(path).resolve().relative_to(Path(project_root).resolve())
    except ValueError:
        return False
    return True


def folders_down_to(project_root: Path, file: Path) -> list[Path]:
    """The project root, then each folder down to ``file``'s own."""
    relative = file.parent.relative_to(project_root)
    chain = [project_root]
    for part in relative.parts:
        chain.append(chain[-1] / part)
    return chain


def base_folder(project_root: Path, file: Path) -> Path:
    """The first folder up from ``file`` without an ``__init__.py`` (never above the root)."""
    folder = file.parent
    while folder != project_root and (folder / "__init__.py").is_file():
        folder = folder.parent
    return folder


def module_paths(folder: Path, dotted: str) -> list[Path]:
    """Every file that ``import dotted`` could load from ``folder``: each package's __init__ on the way."""
    parts = dotted.split(".")
    out = []
    for n in range(1, len(parts) + 1):
        stem = folder.joinpath(*parts[:n])
        out += [stem.with_name(stem.name + ".py"), stem / "__init__.py"]
    return out


def imported_paths(project_root: Path, file: Path) -> list[Path]:
    """Project paths the imports of ``file`` may load, existing or not (static: a computed import is not seen)."""
    try:
        tree = pysource.parse(file)
    except (SyntaxError, ValueError, OSError):
        return []  # the file is digested anyway; a change to it is a change
    searched = [base_folder(project_root, file), project_root]
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += [p for folder in searched for p in module_paths(folder, alias.name)]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = file.parent
                for _ in range(node.level - 1):
                    package = package.parent
                folders = [package]
            else:
                folders = searched
            module = node.module or ""
            for folder in folders:
                if module:
                    out += module_paths(folder, module)
                # `from pkg import name` may load the submodule pkg/name.py
                base = folder.joinpath(*module.split(".")) if module else folder
                out += [p for alias in node.names for p in module_paths(base, alias.name)]
    return [p for p in out if inside(project_root, p.parent)]


def target_file(project_root: Path, target: str) -> Optional[Path]:
    """The file of ``path.py::function[params]`` when it lies within the project."""
    file_part = target.partition("::")[0]
    if not file_part or Path(file_part).is_absolute() or ".." in Path(file_part).parts:
        return None
    path = project_root / file_part
    return path if inside(project_root, path) else None


def candidates(project_root: Path, targets: Iterable[str]) -> set[Path]:
    """Every project path a cell of these targets may read, existing or not; the root's pytest
    configuration and conftest.py always (pytest reads them for any target)."""
    project_root = Path(project_root)
    found: set[Path] = {project_root / name for name in (*PYTEST_CONFIGS, CONFTEST)}
    to_read: list[Path] = []
    for target in targets:
        file = target_file(project_root, target)
        if file is None:
            continue
        found.add(file)
        to_read.append(file)
        for folder in folders_down_to(project_root, file):
            found.update(folder / name for name in (*PYTEST_CONFIGS, CONFTEST))
            to_read.append(folder / CONFTEST)
    read: set[Path] = set()
    while to_read and len(read) < MAX_FILES:
        file = to_read.pop()
        if file in read or not file.is_file() or file.suffix != ".py" or not inside(project_root, file):
            continue
        read.add(file)
        for path in imported_paths(project_root, file):
            found.add(path)
            to_read.append(path)
    return found

"""Resolve pytest targets by reading files, never by importing them.

Importing a benchmark file would import flag_gems and triton at prepare time; a
target that does not resolve must be refused before anything runs, with the
file and function named. A target is a path inside the project, relative to its
root: prepare digests the project's files (`campaign.planning.harness`), so code outside it
could change after prepare unseen. A node id's ``[params]`` is checked against the
function's parametrisation as far as the files show it (`campaign.planning.paramids`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from campaign.contract import nodeids, regular
from campaign.planning import collected, paramids, targetfiles


def split(target: str) -> tuple[str, str | None]:
    """"file.py::function[param]" -> ("file.py", "function"); "file.py::C::test_m" -> ("file.py", "C::test_m")."""
    node = nodeids.parse(target)
    return node.path, "::".join(node.names) or None


def outside(project_root: Path, file_part: str) -> Optional[str]:
    """Why ``file_part`` is not a path inside the project, or None."""
    why = ("a target must be a file of the project, given relative to its root, so prepare can digest it "
           "(a test file of your own, anywhere, is a provider: pytest workload)")
    if Path(file_part).is_absolute():
        return f"{file_part}: an absolute path; {why}"
    if ".." in Path(file_part).parts:
        return f"{file_part}: '..' leaves the folder it names; {why}"
    if not targetfiles.inside(project_root, Path(project_root) / file_part):
        return f"{file_part}: a symbolic link out of the project ({project_root}); {why}"
    return None


def problem(project_root: Path, target: str) -> str | None:
    """None when ``target`` resolves; otherwise what is missing."""
    try:
        file_part, function = split(target)
    except ValueError as exc:
        return str(exc)
    escape = outside(project_root, file_part)
    if escape:
        return escape
    path = Path(project_root) / file_part
    why = regular.not_regular(path)
    if why is not None:
        return f"{file_part}: {why}"
    try:
        return collected.name_problem(project_root, path, file_part, tuple(function.split("::")) if function else ())
    except SyntaxError as exc:
        return f"{file_part}:{exc.lineno}: does not parse: {exc.msg}"
    except ValueError as exc:      # not a node id pytest writes
        return str(exc)


def node_problem(project_root: Path, node: str) -> tuple[Optional[str], Optional[str]]:
    """(what is wrong, None) or (None, why its parameters were not checked) or (None, None).

    Beyond `problem`: ``function[params]`` must be one of the ids pytest would give the
    function's parametrisation; where the files cannot show that, the second item says so."""
    missing = problem(project_root, node)
    if missing:
        return missing, None
    file_part, _, rest = node.partition("::")
    function, bracket, params = rest.partition("[")
    if not bracket:
        return None, None
    if not function or not params.endswith("]"):
        return f"{node}: a node id is file.py::function[params]", None
    try:
        wrong = paramids.check(Path(project_root), Path(project_root) / file_part, function, params[:-1])
        return (None if wrong is None else f"{file_part}::{wrong}"), None
    except paramids.Unreadable as exc:
        return None, f"{node}: parameters not checked (cannot be read without running the code: {exc})"
    except (SyntaxError, ValueError, OSError) as exc:
        return None, f"{node}: parameters not checked ({type(exc).__name__}: {exc})"


def keyword_problem(project_root: Path, file_part: str, k: str) -> tuple[Optional[str], Optional[str]]:
    """(why ``-k k`` in the file is refused, None), (None, why it was not checked) or (None, None): a
    ``-k`` that selects none of the tests the file collects is refused (`campaign.planning.collected`)."""
    if problem(project_root, file_part):
        return None, None            # the file's own refusal says it
    try:
        return collected.keyword_problem(Path(project_root), Path(project_root) / file_part, file_part, k)
    except (SyntaxError, ValueError, OSError, StopIteration) as exc:
        return None, f"{file_part}: -k {k!r} not checked ({type(exc).__name__}: {exc})"

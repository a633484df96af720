"""The environment of every program the project starts other than a worker: built from nothing.

git (a package's commit in preflight, a FlagGems checkout's at prepare), the disassembler, the
vendors' telemetry tools and pytest's collection for ``inventory`` never inherit the caller's
environment, nor a cell's: a ``GIT_CONFIG_GLOBAL`` a manifest declared, or the runner's own
``~/.gitconfig``, named a ``core.fsmonitor`` script or a pager that git then ran inside the
candidate's worker, unrecorded. What they get is `TOOL_ENV` (this file, digested with the rest of
the harness: the record of it) plus the search path and, where a tool needs them, the named
variables of the caller (``keep``), which the cell's run identity records as ``inherited_env``.
HOME is a folder made empty for the call. git also gets `GIT_ARGS`: a repository's own
``.git/config`` (a FlagGems checkout's) may set ``core.fsmonitor`` or ``core.hooksPath`` too, and
``-c`` wins over every file.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator, Mapping

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
TOOL_ENV = {
    # the POSIX locale (glibc's name for the C locale: the same messages and collation, spelled apart from
    # the verdict class C)
    "LANG": "POSIX", "LC_ALL": "POSIX",
    # no system, global or XDG git configuration, no prompt, no lock taken for a read
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "PAGER": "cat",
}
GIT_ARGS = ("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}", "-c", "core.pager=cat",
            "-c", f"core.attributesFile={os.devnull}", "-c", "core.untrackedCache=false")


def tool_env(home: str, caller: Mapping[str, str], keep: tuple[str, ...] = ()) -> dict[str, str]:
    """`TOOL_ENV`, HOME and XDG_CONFIG_HOME at ``home``, the caller's PATH and its ``keep`` variables."""
    env = {**TOOL_ENV, "HOME": home, "XDG_CONFIG_HOME": home, "PATH": caller.get("PATH") or DEFAULT_PATH}
    env.update({name: caller[name] for name in keep if name in caller})
    return env


@contextlib.contextmanager
def clean(caller: Mapping[str, str], keep: tuple[str, ...] = ()) -> Iterator[dict[str, str]]:
    """`tool_env` with HOME at a folder made empty for the call, removed after it."""
    with tempfile.TemporaryDirectory(prefix="campaign-home-") as home:
        yield tool_env(home, caller, keep)


def git_argv(*args: str) -> list[str]:
    """``git`` with `GIT_ARGS` before ``args``."""
    return ["git", *GIT_ARGS, *args]

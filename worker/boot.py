"""The worker's first lines: the project importable by its package names only, then
``campaign.worker`` run as ``python -m campaign.worker`` would run it.

Run by path under ``python -P`` (`campaign.running.workerlaunch`), before anything of the
project can be imported, so it imports the standard library only. ``-P`` leaves the
working directory and this file's folder off ``sys.path``: a module dropped at the project
root (a ``pydantic.py``, a ``pluggy.py``) is never found. The packages the parent itself runs
from are named on the command line (``campaign=/abs/campaign campaign.worker=/abs/worker
... -- ARGS``) and found first, ahead of any installed copy, so the worker runs the code the
parent digested and nothing else of the project's folder.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import runpy
import sys

SEPARATOR = "--"


class Packages(importlib.abc.MetaPathFinder):
    """The named packages at the named folders; their submodules follow from their ``__path__``."""

    def __init__(self, folders: dict[str, str]):
        self.folders = folders

    def find_spec(self, name, path=None, target=None):
        folder = self.folders.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(name, f"{folder}/__init__.py", submodule_search_locations=[folder])


def main(argv: list[str]) -> None:
    if SEPARATOR not in argv:
        sys.exit(f"usage: python -P boot.py PACKAGE=FOLDER ... {SEPARATOR} WORKER_ARGS")
    split = argv.index(SEPARATOR)
    folders = dict(arg.split("=", 1) for arg in argv[:split])
    sys.meta_path.insert(0, Packages(folders))
    sys.argv = [sys.argv[0], *argv[split + 1:]]
    runpy.run_module("campaign.worker", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

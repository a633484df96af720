"""How a worker python starts: only digested code can run in it.

- ``python -P`` and ``PYTHONSAFEPATH=1`` (for any python the worker starts in turn): no
  working-directory or script-folder entry on ``sys.path``, so a module dropped at the
  project root after prepare is never imported in place of the real one;
- the project made importable explicitly: the worker is started through ``worker/boot.py``,
  which maps the package names (``campaign``, ``campaign.worker``, ...) to the folders this
  parent runs from (`packages`), and nothing else of the project's folder;
- ``PYTHONDONTWRITEBYTECODE=1`` and ``PYTHONPYCACHEPREFIX`` at a fresh, empty folder per
  process: no existing ``__pycache__/*.pyc`` is ever read, so a ``.pyc`` compiled from edited
  source and stamped with the real source's mtime and size cannot replace it (pytest reads its
  rewritten tests' pycs under the prefix too).
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from typing import IO

from campaign.contract.plans import CellPlan
from campaign.running.cellenv import cell_env
from campaign.running.runsetup import RunSetup

PACKAGES = ("campaign", "campaign.worker", "campaign.plugins", "campaign.reaccount")
BOOT = "boot.py"                    # in campaign.worker's folder
SEPARATOR = "--"


def packages() -> dict[str, str]:
    """Each package's folder as this process imports it: the worker runs the same code."""
    folders = {}
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        folders[name] = str(Path(spec.submodule_search_locations[0]).resolve())
    return folders


def argv(python: str, args: list[str], folders: dict[str, str]) -> list[str]:
    boot = str(Path(folders["campaign.worker"]) / BOOT)
    return [python, "-P", boot, *(f"{name}={folder}" for name, folder in folders.items()), SEPARATOR, *args]


def pycache_dir(plan: CellPlan) -> Path:
    """The process's bytecode prefix, beside its Triton cache (dropped with it, `Runner.drop_caches`)."""
    return Path(f"{plan.triton_cache_dir}-pycache")


def protections(pycache: Path) -> dict[str, str]:
    return {"PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(pycache)}


def start(setup: RunSetup, plan: CellPlan, args: list[str], out: IO, err: IO) -> subprocess.Popen:
    """The worker for ``plan`` in its own session, with the cell's env and the import protections."""
    pycache = pycache_dir(plan)
    shutil.rmtree(pycache, ignore_errors=True)      # fresh: whatever an earlier process left is not read
    pycache.mkdir(parents=True)
    env = {**cell_env(setup.parent_env, plan), **protections(pycache)}
    return subprocess.Popen(argv(setup.python, args, packages()), cwd=setup.project_root, env=env,
                            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)

"""How a worker python starts: only digested code can run in it.

- ``python -P`` and ``PYTHONSAFEPATH=1`` (for any python the worker starts in turn): no
  working-directory or script-folder entry on ``sys.path``, so a module dropped at the
  project root after prepare is never imported in place of the real one;
- the project made importable explicitly: the worker is started through ``worker/boot.py``,
  which maps the package names (``campaign``, ``campaign.worker``, ...) to the folders this
  parent runs from (`packages`), and nothing else of the project's folder;
- ``PYTHONPYCACHEPREFIX`` at a folder made empty in the run's own scratch folder when the run
  starts (`pycache_dir`): no ``__pycache__/*.pyc`` that existed before the run is ever read, so a
  ``.pyc`` compiled from edited source and stamped with the real source's mtime and size cannot
  replace it (pytest reads its rewritten tests' pycs under the prefix too). The run's own workers
  write their bytecode there and the next ones read it: measured on the H200, a prefix per process
  (nothing reused) made a 21-workload screen's cells 75 % slower in sum (start 3.6 -> 25.3 s,
  imports 34.6 -> 108.0 s: `receipts/h200-2026-12-01-c.md`). An inherited ``PYTHONDONTWRITEBYTECODE``
  is dropped for the worker, or nothing would be written there to reuse. Installed packages'
  bytecode (torch's, triton's: never digested) is seeded into the fresh prefix from a store the
  runs keep under the user's cache folder, and nothing of the harness ever is (`campaign.running.bytecode`):
  checked hash-based files only, each verified against its source before it is seeded, and the
  worker runs with ``--check-hash-based-pycs always``, so the import system compares every
  hash-based ``.pyc`` with its source, an unchecked one (flags 0b01) as well.
"""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import IO, Optional

from campaign.contract import cores as host_cores
from campaign.contract.cores import LANE_CORES_VARIABLE
from campaign.contract.plans import CellPlan
from campaign.running.cellenv import cell_env
from campaign.running.runsetup import RunSetup

PACKAGES = ("campaign", "campaign.worker", "campaign.plugins", "campaign.reaccount")
BOOT = "boot.py"                    # in campaign.worker's folder
SEPARATOR = "--"
PYCACHE = "pycache"                 # in the run's scratch folder
# every hash-based .pyc compared with its source, an unchecked one too (PEP 552)
CHECK_HASHES = ("--check-hash-based-pycs", "always")


def packages() -> dict[str, str]:
    """Each package's folder as this process imports it: the worker runs the same code."""
    folders = {}
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        folders[name] = str(Path(spec.submodule_search_locations[0]).resolve())
    return folders


def argv(python: str, args: list[str], folders: dict[str, str]) -> list[str]:
    boot = str(Path(folders["campaign.worker"]) / BOOT)
    return [python, "-P", *CHECK_HASHES, boot, *(f"{name}={folder}" for name, folder in folders.items()), SEPARATOR, *args]


def pycache_dir(setup: RunSetup) -> Path:
    """The run's bytecode prefix, in its scratch folder (made fresh for this run, deleted after it)."""
    return Path(setup.scratch) / PYCACHE


def protections(pycache: Path) -> dict[str, str]:
    return {"PYTHONSAFEPATH": "1", "PYTHONPYCACHEPREFIX": str(pycache)}


def launch_env(cell: dict[str, str], pycache: Path) -> dict[str, str]:
    """The cell's environment with the import protections. The run's prefix is written by its own
    workers (fresh at the run's start): an inherited PYTHONDONTWRITEBYTECODE would make every worker
    compile every module again from source, so it is dropped."""
    env = {**cell, **protections(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def lane_cores(lanes: int, timed: bool, cores: int, granted: Optional[int] = None) -> dict[str, str]:
    """The cores a worker may spread its own threads over (config compiles, SASS disassembly), where it
    shares its host: ``granted`` (a Ray CPU task: the one core it asked its node for), else an IR-pass
    lane's share, cores / lanes, at least one. Nothing for a timed cell: it runs alone, every core its."""
    if granted is not None:
        return {LANE_CORES_VARIABLE: str(max(1, granted))}
    if timed or lanes <= 1:
        return {}
    return {LANE_CORES_VARIABLE: str(max(1, cores // lanes))}


def start(setup: RunSetup, plan: CellPlan, args: list[str], out: IO, err: IO) -> subprocess.Popen:
    """The worker for ``plan`` in its own session, with the cell's env, its lane's share of the cores and
    the import protections."""
    pycache = pycache_dir(setup)
    pycache.mkdir(parents=True, exist_ok=True)      # the first worker of the run makes it: empty then
    share = lane_cores(setup.lanes, plan.task.timed, host_cores.usable(), setup.cell_cores)
    env = launch_env({**cell_env(setup.parent_env, plan), **share}, pycache)
    return subprocess.Popen(argv(setup.python, args, packages()), cwd=setup.project_root, env=env,
                            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)

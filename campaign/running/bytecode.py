"""Installed packages' bytecode kept between runs; the project's and every digested file's never.

A run's workers read and write bytecode only under a prefix made empty for the run
(`campaign.running.workerlaunch`), so no ``.pyc`` planted beside the project's sources is ever
read. That costs every run the compile of torch and triton from source in its first worker
(a no-op cell took 6.3 s first and 2.3-2.5 s after it, on the 2-core CI machine: about 4 s a run,
`tests/bench/suite_time.md`). Installed packages are not digested (their versions are pinned and
recorded in each cell's run identity), and a ``.pyc`` of theirs gives nothing that writing their
source would not, so their bytecode is kept in a store under the user's cache folder (`store_dir`):

- one rule says whose bytecode is reusable (`reusable_rule`): a source under an installed-packages
  folder of this python (`installed_roots`) that is no file of the run's harness (the project's
  package folders and every file prepare digested, wherever it is);
- `seed`: before the first worker starts, the store's files of reusable sources are linked (or
  copied) into the run's empty prefix; any other file in the store is never seeded;
- `keep`: after the run, each ``.pyc`` of a reusable source in the prefix is added to the store,
  written whole and renamed into place, so runs at once never read half a file; one the store holds
  stale (another header: its package was upgraded since) is replaced the same way;
- `reused`: both around a group of workers, wherever they start: the session on one host, and each
  Ray task on its node (`campaign.running.raynode`), which reads and fills that node's own store.
  A node that skipped it paid the compile again in every task's first cell.

The project's code, a FlagGems checkout's and a user's own test files compile fresh in every run,
as before. Paths are compared resolved; one that resolves outside the installed folders is not kept.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

from campaign.planning.harness import HARNESS_DIRS

STORE = "campaign"                    # under the user's cache folder
PYC = ".pyc"


def store_dir() -> Path:
    """``$XDG_CACHE_HOME/campaign/bytecode-<cache tag>`` (``~/.cache`` without it): one per python version."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / STORE / f"bytecode-{sys.implementation.cache_tag}"


def installed_roots() -> tuple[Path, ...]:
    """The folders this python installs packages and its standard library into."""
    paths = sysconfig.get_paths()
    found = [paths[key] for key in ("purelib", "platlib", "stdlib", "platstdlib") if paths.get(key)]
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    return tuple(sorted({Path(path).resolve() for path in found}))


def source_of(prefix: Path, pyc: Path) -> Path:
    """The source a ``.pyc`` under a PYTHONPYCACHEPREFIX stands for: ``<prefix>/a/b/m.cpython-312.pyc`` -> ``/a/b/m.py``."""
    return Path("/") / pyc.parent.relative_to(prefix) / (pyc.name.split(".", 1)[0] + ".py")


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _resolved_source(folder: Path, pyc_name: str) -> Path:
    """The resolved source of ``pyc_name`` in an already-resolved ``folder``: the file resolved again
    only when it is itself a link (one lstat, not a walk of every component)."""
    source = folder / (pyc_name.split(".", 1)[0] + ".py")
    return source.resolve() if source.is_symlink() else source


def seed(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> int:
    """Link (else copy) into ``prefix`` every file of ``store`` whose source is ``reusable``; how many.
    A file the store holds for any other source (planted by whoever can write the store) is never seeded.
    Walked a folder at a time: each folder resolved and made once (a run's start seeds thousands)."""
    count = 0
    for folder, _subfolders, names in sorted(os.walk(store)) if store.is_dir() else ():
        relative = os.path.relpath(folder, store)
        source_folder = (Path("/") / relative).resolve()
        wanted = [name for name in sorted(names)
                  if name.endswith(PYC) and reusable(_resolved_source(source_folder, name))]
        if not wanted:
            continue
        target_folder = os.path.join(prefix, relative)
        try:
            os.makedirs(target_folder, exist_ok=True)
        except OSError:
            continue       # a full disk: these modules compile from source
        for name in wanted:
            stored, target = os.path.join(folder, name), os.path.join(target_folder, name)
            try:
                try:
                    os.link(stored, target)
                except OSError:
                    shutil.copyfile(stored, target)
                count += 1
            except OSError:
                continue   # a file another run is replacing, a full disk: that module compiles from source
    return count


def _header(path: Path) -> bytes:
    """What Python checks a ``.pyc`` against its source by: magic, flags, the source's mtime and size (or hash)."""
    with open(path, "rb") as handle:
        return handle.read(16)


def _stored_already(pyc: Path, target: Path) -> bool:
    """The store holds this very ``.pyc`` (the seeded link, or a copy with the same header). A stored
    file with another header is stale (its source changed since: a package upgraded) and is replaced,
    else every later run would compile that module from source again."""
    try:
        return target.exists() and (os.path.samefile(pyc, target) or _header(pyc) == _header(target))
    except OSError:
        return True        # unreadable: left as it is


def keep(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> int:
    """Add to ``store`` each ``.pyc`` of ``prefix`` whose source is ``reusable`` and not stored yet (or
    stored stale); how many."""
    count = 0
    for pyc in sorted(prefix.rglob(f"*{PYC}")) if prefix.is_dir() else ():
        target = store / pyc.relative_to(prefix)
        if _stored_already(pyc, target) or not reusable(source_of(prefix, pyc).resolve()):
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{pyc.name}.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(pyc.read_bytes())
            os.replace(temporary, target)
            count += 1
        except OSError:
            return count   # a read-only or full cache folder: the next run compiles, nothing else changes
    return count


def reusable_rule(roots: tuple[Path, ...], project_root: Path, package_folders: Iterable[str],
                  digested: Iterable[str]) -> Callable[[Path], bool]:
    """Whether a (resolved) source's bytecode may be kept and seeded: under one of ``roots`` (this
    python's installed folders), not under the project's package folders, and no file prepare
    digested (its record's keys: relative to the project root, or absolute)."""
    folders = tuple((project_root / name).resolve() for name in package_folders)
    files = {(project_root / key if not Path(key).is_absolute() else Path(key)).resolve() for key in digested}

    @functools.lru_cache(maxsize=None)
    def folder_allowed(folder: Path) -> bool:     # a file is under a folder exactly when its own folder is
        return _under(folder, roots) and not _under(folder, folders)

    return lambda source: folder_allowed(source.parent) and source not in files


def run_rule(project_root: Path, digested: Iterable[str]) -> Callable[[Path], bool]:
    """`reusable_rule` for a run of a root prepared at ``project_root`` on this python: its harness
    folders and ``digested`` (prepare's harness record's keys) never reused."""
    return reusable_rule(installed_roots(), project_root, HARNESS_DIRS, digested)


@contextlib.contextmanager
def reused(prefix: Path, project_root: Path, digested: Iterable[str]) -> Iterator[None]:
    """Seed ``prefix`` from this machine's store before the first worker; keep what the workers
    compiled after the last, also when the group ends early."""
    rule, store = run_rule(project_root, digested), store_dir()
    seed(prefix, store, rule)
    try:
        yield
    finally:
        keep(prefix, store, rule)

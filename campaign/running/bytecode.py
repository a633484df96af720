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
  written whole and renamed into place, so runs at once never read half a file.

The project's code, a FlagGems checkout's and a user's own test files compile fresh in every run,
as before. Paths are compared resolved; one that resolves outside the installed folders is not kept.
"""
from __future__ import annotations

import os
import shutil
import site
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

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


def _under(path: str, roots: tuple[str, ...]) -> bool:
    """Whether the resolved ``path`` is one of ``roots`` (resolved) or inside one: `Path.is_relative_to`
    on strings, which a seed asks of every stored file (pathlib's cost was most of a seed's)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _stored(folder: Path) -> Iterator[tuple[str, str, str]]:
    """Each ``.pyc`` under ``folder`` (a PYTHONPYCACHEPREFIX layout; links not followed) as its folder
    relative to ``folder``, its name and its source, the source's folder resolved (`_resolved` finishes
    it). A folder is resolved once for all its files, where resolving each file's path walked every
    folder above it again; strings, not paths: pathlib was most of what a seed cost."""
    for at, _folders, names in sorted(os.walk(folder)):
        pycs = sorted(name for name in names if name.endswith(PYC))
        rel = os.path.relpath(at, folder)
        source_dir = os.path.realpath(os.sep + ("" if rel == os.curdir else rel)) if pycs else ""
        for name in pycs:
            yield rel, name, os.path.join(source_dir, name.split(".", 1)[0] + ".py")


def _resolved(source: str) -> Path:
    """``source`` (its folder resolved) as `Path.resolve` gives it: a link followed."""
    return Path(os.path.realpath(source) if os.path.islink(source) else source)


def seed(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> int:
    """Link (else copy) into ``prefix`` every file of ``store`` whose source is ``reusable``; how many.
    A file the store holds for any other source (planted by whoever can write the store) is never seeded."""
    count, made = 0, set()
    for rel, name, source in _stored(store) if store.is_dir() else ():
        if not reusable(_resolved(source)):
            continue
        stored, folder = os.path.join(store, rel, name), os.path.normpath(os.path.join(prefix, rel))
        try:
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            try:
                os.link(stored, os.path.join(folder, name))
            except OSError:
                shutil.copyfile(stored, os.path.join(folder, name))
            count += 1
        except OSError:
            continue       # a file another run is replacing, a full disk: that module compiles from source
    return count


def keep(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> int:
    """Add to ``store`` each ``.pyc`` of ``prefix`` whose source is ``reusable`` and not stored yet; how many."""
    count = 0
    for rel, name, source in _stored(prefix) if prefix.is_dir() else ():
        target = os.path.normpath(os.path.join(store, rel, name))
        if os.path.exists(target) or not reusable(_resolved(source)):
            continue
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{name}.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(Path(prefix, rel, name).read_bytes())
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
    installed = tuple(str(root) for root in roots)
    folders = tuple(str((project_root / name).resolve()) for name in package_folders)
    files = {str((project_root / key if not Path(key).is_absolute() else Path(key)).resolve()) for key in digested}

    def reusable(source: Path) -> bool:
        path = str(source)
        return _under(path, installed) and not _under(path, folders) and path not in files
    return reusable

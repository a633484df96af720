"""Installed packages' bytecode kept between runs, each file checked against its source before use;
the project's and every digested file's never.

A run's workers read and write bytecode only under a prefix made empty for the run
(`campaign.running.workerlaunch`), so no ``.pyc`` planted beside the project's sources is ever
read. That costs every run the compile of torch and triton from source in its first worker: a
worker's start (torch, triton, the worker's modules) took 5.5 CPU-s cold and 2.2 warm on the 2-core
CI machine (`tests/bench/bytecode.md`), and the suite starts about 150 runs. So installed packages'
bytecode is kept in a store under the user's cache folder (`store_dir`), which anyone who can write
that folder can write too. Nothing read from it is trusted:

- the store holds checked hash-based ``.pyc`` files only (PEP 552: the header carries the
  source's hash and the import system compares it with the source on every import; the workers run
  with ``--check-hash-based-pycs always``). An unchecked hash-based file or a timestamp one (a
  header with the source's mtime and size: anyone can write those for any code) never verifies;
- one rule says whose bytecode is reusable (`reusable_rule`): a source under an installed-packages
  folder of this python (`installed_roots`) that is no file of the run's harness (the project's
  package folders and every file prepare digested, wherever it is);
- `seed`: before the first worker starts, each stored file of a reusable source is read once and
  verified (`checked`: this python's magic, the checked flag, the source's hash as it is now, a
  body that unmarshals whole, so no truncated file); only the bytes verified are written into the
  run's prefix (a temporary file renamed into place: a full disk leaves nothing half written). A
  file that does not verify is discarded from the store; any other file in it is never seeded;
- `keep`: after the run, each ``.pyc`` of a reusable source the workers compiled is turned into
  its checked form (`as_checked`: only a whole timestamp file whose header is the source's mtime
  and size now, i.e. compiled from the source as it is) and added to the store the same way. A
  stored file that verifies is never replaced; one that does not (stale: its package upgraded;
  truncated) is;
- `reused`: both around a group of workers, wherever they start: the session on one host, and each
  Ray task on its node (`campaign.running.raynode`), which reads and fills that node's own store.

What a check on the source's hash cannot tell is whether the body is the compile of that source:
a checked file forged with the source's hash over other code verifies. Closing that means
compiling every module again, which is the whole cost the store saves; the installed packages'
own files are digested against their RECORD and checked in preflight (`campaign.planning.installed`).
The project's code, a FlagGems checkout's and a user's own test files compile fresh in every run.
Paths are compared resolved; one that resolves outside the installed folders is not kept.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import marshal
import os
import site
import sys
import sysconfig
import tempfile
import types
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from campaign.contract.regular import TooLarge, read_regular
from campaign.planning import installedcode
from campaign.planning.harness import HARNESS_DIRS

PYC = ".pyc"
MAGIC = importlib.util.MAGIC_NUMBER
CHECKED = 0b11                        # PEP 552 flags: hash-based, checked against the source
HEADER = 16
CAP = 64 << 20                        # no .pyc or source of an installed package is near this


def store_dir() -> Path:
    """``$XDG_CACHE_HOME/campaign/bytecode-<cache tag>`` (``~/.cache`` without it): one per python version."""
    return installedcode.user_cache() / f"bytecode-{sys.implementation.cache_tag}"


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


def _read(path: Path, follow: bool = False) -> Optional[bytes]:
    """A regular file's bytes (a FIFO, a device, a link planted in the store: None, unwaited)."""
    try:
        return read_regular(path, CAP, follow=follow)
    except (OSError, TooLarge, ValueError):
        return None


def _whole(data: bytes) -> bool:
    """The body unmarshals, whole, to a code object (a truncated file raises EOFError)."""
    try:
        return isinstance(marshal.loads(memoryview(data)[HEADER:]), types.CodeType)
    except (EOFError, ValueError, TypeError):
        return False


def checked(data: Optional[bytes], source: Optional[bytes]) -> bool:
    """``data`` is a whole checked hash-based ``.pyc`` of ``source`` for this python."""
    return (data is not None and source is not None and len(data) > HEADER and data[:4] == MAGIC
            and int.from_bytes(data[4:8], "little") == CHECKED
            and data[8:HEADER] == importlib.util.source_hash(source) and _whole(data))


def as_checked(data: Optional[bytes], source_path: Path) -> Optional[bytes]:
    """The checked form of a ``.pyc`` a worker wrote: a timestamp file whose header is the source's
    mtime and size as they are now (compiled from this source), or a checked one; else None."""
    try:
        with open(source_path, "rb") as handle:
            stat, source = os.fstat(handle.fileno()), handle.read(CAP)
    except OSError:
        return None
    if data is None or len(data) <= HEADER or data[:4] != MAGIC:
        return None
    if int.from_bytes(data[4:8], "little") == 0:
        stamp = (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
        if data[8:HEADER] != stamp:
            return None
        data = MAGIC + CHECKED.to_bytes(4, "little") + importlib.util.source_hash(source) + data[HEADER:]
    return data if checked(data, source) else None


def _write(target: Path, data: bytes) -> Optional[os.stat_result]:
    """``data`` at ``target`` through a temporary file renamed into place: readers never see half a
    file, and a write that fails (a full disk, EFBIG) leaves the target as it was."""
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
        return os.stat(target)
    except OSError:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return None


def seed(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> dict[Path, tuple[int, int]]:
    """Write into ``prefix`` every file of ``store`` whose source is ``reusable`` and that verifies
    against it (`checked`); each one written, with its inode and mtime (`keep` skips those unchanged).
    A file that does not verify is discarded; one the store holds for any other source is never read.
    Walked a folder at a time: each folder resolved and made once (a run's start seeds thousands)."""
    seeded: dict[Path, tuple[int, int]] = {}
    for folder, _subfolders, names in sorted(os.walk(store)) if store.is_dir() else ():
        relative = os.path.relpath(folder, store)
        source_folder = (Path("/") / relative).resolve()
        wanted = [(name, source) for name in sorted(names) if name.endswith(PYC)
                  and reusable(source := _resolved_source(source_folder, name))]
        target_folder = Path(prefix) / relative
        for name, source in wanted:
            stored = Path(folder) / name
            data = _read(stored)
            if not checked(data, _read(source, follow=True)):
                with contextlib.suppress(OSError):
                    os.unlink(stored)      # stale, truncated, unchecked or foreign: never used, replaced by `keep`
                continue
            try:
                target_folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                break      # a full disk: these modules compile from source
            written = _write(target_folder / name, data)
            if written is not None:
                seeded[target_folder / name] = (written.st_ino, written.st_mtime_ns)
    return seeded


def keep(prefix: Path, store: Path, reusable: Callable[[Path], bool],
         seeded: Optional[dict[Path, tuple[int, int]]] = None) -> int:
    """Add to ``store`` the checked form of each ``.pyc`` of ``prefix`` whose source is ``reusable``,
    where the store holds none that verifies; how many. A file `seed` wrote and no worker rewrote is
    the store's already; a prefix file that is no whole compile of its source now is never kept."""
    count, seeded = 0, seeded or {}
    for pyc in sorted(prefix.rglob(f"*{PYC}")) if prefix.is_dir() else ():
        try:
            if seeded.get(pyc) == ((stat := pyc.stat()).st_ino, stat.st_mtime_ns):
                continue
        except OSError:
            continue
        source = source_of(prefix, pyc).resolve()
        target = store / pyc.relative_to(prefix)
        if not reusable(source) or (data := as_checked(_read(pyc), source)) is None:
            continue
        if checked(_read(target), _read(source, follow=True)):
            continue       # a good stored file is never replaced
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return count   # a read-only or full cache folder: the next run compiles, nothing else changes
        count += _write(target, data) is not None
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
    seeded = seed(prefix, store, rule)
    try:
        yield
    finally:
        keep(prefix, store, rule, seeded)

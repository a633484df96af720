"""Installed packages' bytecode kept between runs, each file checked against its source before use;
the project's and every digested file's never.

Workers read and write bytecode only under a prefix made empty for the run (`workerlaunch`). A
cold prefix costs each run's first worker the compile of torch and triton (a worker's start: 5.5
CPU-s cold, 2.4 seeded, `tests/bench/bytecode.md`; the suite starts about 150 runs), so installed
packages' bytecode is kept in a store under the user's cache folder (`store_dir`), which anyone who
can write that folder can write too. Nothing read from it is trusted:

- the store holds checked hash-based ``.pyc`` files only (PEP 552: the header carries the
  source's hash and the import system compares it with the source on every import; the workers run
  with ``--check-hash-based-pycs always``). An unchecked hash-based file or a timestamp one (a
  header with the source's mtime and size: anyone can write those for any code) never verifies;
- one rule says whose bytecode is reusable (`reusable_rule`): a source under an installed-packages
  folder of this python (`installed_roots`) that is no file of the run's harness (the project's
  package folders and every file prepare digested, wherever it is);
- `seed`: before the first worker starts, each stored file of a reusable source is verified
  (`checked`: this python's magic, the checked flag, the source's hash as it is now, a body that
  unmarshals whole, so no truncated file) and written into the run's prefix (a temporary file
  renamed into place: a full disk leaves nothing half written). Verified once: the store lists each
  file with its lstat then (``.verified``: size, mtime, inode; a write or a truncation moves the
  mtime, a rename over it the inode), and a listed file unchanged since is linked into the prefix
  unread (`tests/bench/bytecode.md`); the import system still compares its hash with the source on
  every import. A file that does not verify is discarded from the store; any other file in it is
  never seeded;
- `keep`: after the run, each ``.pyc`` of a reusable source the workers compiled is turned into
  its checked form (`as_checked`: only a whole file compiled from the source as it is now) and
  added the same way, listed; a stored file that verifies is never replaced, a stale one is;
- `reused`: both around a group of workers: the session on one host, each Ray task on its node.

A hash check cannot tell whether the body is the compile of that source: a checked file forged
with the source's hash over other code verifies (closing that means compiling every module again,
the whole cost the store saves). The project's code, a FlagGems checkout's and a user's own test
files compile fresh in every run. Paths are compared resolved.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import marshal
import os
import shutil
import site
import sys
import sysconfig
import tempfile
import types
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Iterable, Iterator, Optional

from campaign.contract.regular import TooLarge, read_regular
from campaign.planning import installedcode
from campaign.planning.harness import HARNESS_DIRS

PYC = ".pyc"
MAGIC = importlib.util.MAGIC_NUMBER
CHECKED = 0b11                        # PEP 552 flags: hash-based, checked against the source
HEADER = 16
CAP = 64 << 20                        # no .pyc or source of an installed package is near this
VERIFIED = ".verified"                # in the store: each file verified whole, and its lstat then


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


def _write(target: Path, data: bytes | Path) -> Optional[os.stat_result]:
    """``data`` (or a copy of the file it names) at ``target`` through a temporary file renamed into
    place: readers never see half a file, and a write that fails (a full disk, EFBIG) leaves the
    target as it was."""
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, Path):
                with open(data, "rb") as stored:
                    shutil.copyfileobj(stored, handle)
            else:
                handle.write(data)
        os.replace(temporary, target)
        return os.stat(target)
    except OSError:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return None


def _link(stored: Path, target: Path) -> Optional[os.stat_result]:
    """A listed stored file linked into the prefix (else copied there whole, renamed into place)."""
    try:
        os.link(stored, target)
        return os.stat(target)
    except OSError:
        return _write(target, stored)


def _key(stat: os.stat_result) -> str:
    """A stored file as verified: a write to it or a truncation moves its mtime, a rename over it its
    inode. Not the ctime: linking the file into a prefix moves that."""
    return f"{stat.st_size} {stat.st_mtime_ns} {stat.st_ino}"


def _listed(store: Path) -> dict[str, str]:
    """The store's files verified whole before (`VERIFIED`): path in the store -> `_key`."""
    lines = (_read(store / VERIFIED) or b"").decode("utf-8", "replace").splitlines()
    return dict(line.split("\t", 1) for line in lines if "\t" in line)


def _list(store: Path, listed: dict[str, str]) -> None:
    _write(store / VERIFIED, "".join(f"{path}\t{key}\n" for path, key in sorted(listed.items())).encode())


def _seed_one(stored: Path, source: Path, relative: str, listed: dict[str, str]) -> Optional[bytes | Path]:
    """What to write for one stored file: itself (verified before and unchanged since), its verified
    bytes, or None (it does not verify: discarded from the store and the list)."""
    try:
        stat = os.lstat(stored)
    except OSError:
        return None
    before = _key(stat)
    if listed.get(relative) == before and S_ISREG(stat.st_mode):
        return stored
    data = _read(stored)
    if not checked(data, _read(source, follow=True)):
        listed.pop(relative, None)
        with contextlib.suppress(OSError):
            os.unlink(stored)      # stale, truncated, unchecked or foreign: never used, replaced by `keep`
        return None
    with contextlib.suppress(OSError):
        if _key(os.lstat(stored)) == before:
            listed[relative] = before
    return data


def seed(prefix: Path, store: Path, reusable: Callable[[Path], bool]) -> dict[Path, tuple[int, int]]:
    """Write into ``prefix`` every file of ``store`` whose source is ``reusable`` and that verifies
    against it (`checked`); each one written, with its inode and mtime (`keep` skips those unchanged).
    A file verified whole before and unchanged since (`VERIFIED`) is copied unread: the import system
    checks its hash against the source on every import. A file that does not verify is discarded; one
    the store holds for any other source is never read. Walked a folder at a time: each folder
    resolved and made once (a run's start seeds thousands)."""
    seeded: dict[Path, tuple[int, int]] = {}
    listed = _listed(store) if store.is_dir() else {}
    before = dict(listed)
    for folder, _subfolders, names in sorted(os.walk(store)) if store.is_dir() else ():
        relative = os.path.relpath(folder, store)
        source_folder = (Path("/") / relative).resolve()
        wanted = [(name, source) for name in sorted(names) if name.endswith(PYC)
                  and reusable(source := _resolved_source(source_folder, name))]
        target_folder = Path(prefix) / relative
        made = False
        for name, source in wanted:
            data = _seed_one(Path(folder) / name, source, f"{relative}/{name}", listed)
            if data is None:
                continue
            try:
                if not made:
                    target_folder.mkdir(parents=True, exist_ok=True)
                made = True
            except OSError:
                break      # a full disk: these modules compile from source
            written = _link(data, target_folder / name) if isinstance(data, Path) else _write(target_folder / name, data)
            if written is not None:
                seeded[target_folder / name] = (written.st_ino, written.st_mtime_ns)
    if listed != before:
        _list(store, listed)
    return seeded


def keep(prefix: Path, store: Path, reusable: Callable[[Path], bool],
         seeded: Optional[dict[Path, tuple[int, int]]] = None) -> int:
    """Add to ``store`` the checked form of each ``.pyc`` of ``prefix`` whose source is ``reusable``,
    where the store holds none that verifies; how many. A file `seed` wrote and no worker rewrote is
    the store's already; a prefix file that is no whole compile of its source now is never kept."""
    count, seeded, written = 0, seeded or {}, {}
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
            break          # a read-only or full cache folder: the next run compiles, nothing else changes
        if (done := _write(target, data)) is not None:
            written[str(pyc.relative_to(prefix))] = _key(done)
            count += 1
    if written:
        _list(store, {**_listed(store), **written})
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

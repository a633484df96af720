"""The code a worker runs besides the harness, digested at prepare and checked in preflight.

The installed torch, triton and flag_gems (`DISTRIBUTIONS`, whichever are installed) were
recorded by version alone: an edited ``triton/__init__.py`` flipped a verdict and the identity
still said "triton 3.6.0". Now each is checked against its own ``RECORD`` (`drift`): every file
listed with a hash is hashed and compared, and a module file (``.py``, an extension) in its
package folders that RECORD does not list is drift too. prepare refuses a drifted package, naming
the file, and records what it checked (`campaign.contract.rootrecords.InstalledCode`): RECORD's
own sha256, the number of files, and a `fingerprint`: the lstat (size, mtime, ctime, inode) of its
module files, executables and folders. Nobody but the kernel sets a ctime, so a file written, or
an entry added to a folder, after the check changes the fingerprint.

Hashing torch and triton reads 1.4 GB (3-5 s warm, 15 s cold on the CI machine:
``tests/bench/bytecode.md``), so neither side hashes every time: preflight compares the
fingerprint (0.1-0.3 s for torch) and hashes only when it differs (a copied environment, a Ray
node), failing with the drifted files named; prepare keeps each verified fingerprint in the
user's cache folder (`verified_dir`) and hashes only for one it has not verified before.

The interpreter also runs code before anything is imported: each ``.pth`` file of its site
folders (a line starting ``import`` is executed) and a ``sitecustomize`` or ``usercustomize``
module wherever it is on the path. `startup` digests each one found; a clean virtualenv holds
``distutils-precedence.pth`` (setuptools) and the project's ``__editable__*.pth``. They are
recorded at prepare and preflight refuses any added, removed or changed one.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import site
import sys
from pathlib import Path
from typing import Iterable, Mapping, Optional

from campaign.contract.regular import read_regular
from campaign.contract.rootrecords import InstalledCode, InstalledDistribution

DISTRIBUTIONS = ("torch", "triton", "flag_gems")
STARTUP_MODULES = ("sitecustomize", "usercustomize")
# what the import system loads as code; a stray __pycache__ .pyc is never read (the workers' prefix)
MODULE_SUFFIXES = tuple(s for s in importlib.machinery.all_suffixes() if s not in importlib.machinery.BYTECODE_SUFFIXES)
RECORD_CAP = 64 << 20
SHOWN = 5


def rows(distribution: importlib.metadata.Distribution) -> tuple[Path, bytes, list[tuple[str, str, str]]]:
    """(the folder its RECORD's paths are relative to, RECORD's bytes, (path, hash, size) rows)."""
    record = Path(distribution._path) / "RECORD"     # its .dist-info folder: importlib has no public name for it
    data = read_regular(record, RECORD_CAP)
    found = [row if len(row) == 3 else (row + ["", ""])[:3] for row in csv.reader(data.decode("utf-8").splitlines()) if row]
    return Path(distribution.locate_file("")), data, found


def _code(path: str) -> bool:
    return path.endswith(MODULE_SUFFIXES) or "/bin/" in path


def _folders(paths: Iterable[str]) -> list[str]:
    """Every folder of the listed paths inside the distribution's own top folders."""
    seen: set[str] = set()
    for parent in {path.rpartition("/")[0] for path in paths}:
        top = parent.partition("/")[0]
        while parent and parent not in seen and top not in ("..", "") and not top.endswith((".dist-info", ".data")):
            seen.add(parent)
            parent = parent.rpartition("/")[0]
    return sorted(seen)


def fingerprint(base: Path, listed: list[tuple[str, str, str]]) -> str:
    """sha256 over the lstat of the module files, executables and folders RECORD implies."""
    digest = hashlib.sha256()
    for path in sorted({p for p, _, _ in listed if _code(p)}) + _folders(p for p, _, _ in listed):
        try:
            st = os.lstat(os.path.join(base, path))
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode())
        except OSError:
            digest.update(f"{path}\0missing\n".encode())
    return digest.hexdigest()


def _hash_problem(base: Path, path: str, recorded: str) -> Optional[str]:
    algorithm, _, expected = recorded.partition("=")
    try:
        with open(os.path.join(base, path), "rb") as handle:
            got = hashlib.file_digest(handle, algorithm).digest()
    except FileNotFoundError:
        return f"{path}: missing"
    except (OSError, ValueError) as exc:
        return f"{path}: cannot be read ({exc})"
    if base64.urlsafe_b64encode(got).rstrip(b"=").decode() != expected:
        return f"{path}: its {algorithm} differs from RECORD"
    return None


def drift(base: Path, listed: list[tuple[str, str, str]]) -> list[str]:
    """Every file whose hash differs from RECORD, is missing, or is a module file in the package
    folders RECORD does not list."""
    problems = [p for path, recorded, _ in listed if recorded
                if (p := _hash_problem(base, path, recorded)) is not None]
    known = {path for path, _, _ in listed}
    tops = {folder for folder in _folders(known) if "/" not in folder}
    for top in sorted(tops):
        for folder, subfolders, names in os.walk(base / top):
            subfolders.sort()
            relative = os.path.relpath(folder, base)
            problems += [f"{relative}/{name}: not in RECORD" for name in sorted(names)
                         if name.endswith(MODULE_SUFFIXES) and f"{relative}/{name}" not in known]
    return problems


def distribution(name: str) -> Optional[importlib.metadata.Distribution]:
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def named(name: str, problems: list[str]) -> str:
    shown = "; ".join(problems[:SHOWN])
    more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return f"{name}: {shown}{more}"


def startup(paths: Optional[Iterable[str]] = None) -> dict[str, str]:
    """Absolute path -> sha256 of each ``.pth`` file in the site folders and each start-up module found."""
    if paths is None:
        paths = list(site.getsitepackages()) + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    found = {}
    for folder in sorted({str(Path(p).resolve()) for p in paths}):
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
        except OSError:
            continue
        found.update({os.path.join(folder, n): _sha256(os.path.join(folder, n)) for n in names})
    for module in STARTUP_MODULES:
        spec = sys.modules[module].__spec__ if module in sys.modules else importlib.util.find_spec(module)
        if spec is not None and spec.origin not in (None, "built-in", "frozen"):
            found[str(Path(spec.origin).resolve())] = _sha256(spec.origin)
    return found


def _sha256(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return "0" * 64


def startup_problems(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """What changed in the start-up code since it was recorded, each file named."""
    added = [f"{path}: not there at prepare" for path in sorted(set(now) - set(recorded))]
    gone = [f"{path}: gone since prepare" for path in sorted(set(recorded) - set(now))]
    changed = [f"{path}: changed since prepare" for path in sorted(set(now) & set(recorded))
               if now[path] != recorded[path]]
    return added + gone + changed


def user_cache() -> Path:
    """``$XDG_CACHE_HOME/campaign`` (``~/.cache`` without it): what the runs of this user keep."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "campaign"


def verified_dir() -> Path:
    """Where prepare notes each fingerprint it verified by hashing (one empty file each)."""
    return user_cache() / f"installed-{sys.implementation.cache_tag}"


def checked_distribution(name: str, verified: Path) -> Optional[InstalledDistribution]:
    """``name`` as installed, checked against its RECORD (by hashing unless ``verified`` holds its
    fingerprint); None when it is not installed; ValueError naming the drifted files."""
    found = distribution(name)
    if found is None:
        return None
    base, data, listed = rows(found)
    record_sha256, before = hashlib.sha256(data).hexdigest(), fingerprint(base, listed)
    mark = verified / f"{name}-{record_sha256[:16]}-{before}"
    if not mark.is_file():
        problems = drift(base, listed)
        if fingerprint(base, listed) != before:
            problems.append("its files changed while they were hashed")
        if problems:
            raise ValueError(named(name, problems))
        try:
            verified.mkdir(parents=True, exist_ok=True)
            mark.touch()
        except OSError:
            pass           # a read-only cache folder: the next prepare hashes again
    return InstalledDistribution(name=name, version=found.version, record_sha256=record_sha256,
                                 files=sum(1 for _, recorded, _ in listed if recorded), fingerprint=before)


def record(verified: Path) -> InstalledCode:
    """prepare's record; ValueError naming the first drifted package's files."""
    return InstalledCode(distributions={name: checked_distribution(name, verified) for name in DISTRIBUTIONS},
                         startup=startup())


def _distribution_problem(name: str, expected: Optional[InstalledDistribution]) -> tuple[Optional[str], str]:
    """(the problem or None, a note) for one package in a worker."""
    found = distribution(name)
    if expected is None:
        return (f"{name}: installed since prepare ({found.version})" if found is not None else None), ""
    if found is None:
        return f"{name}: installed at prepare ({expected.version}), not now", ""
    base, data, listed = rows(found)
    spec = importlib.util.find_spec(name)
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if origin is None or not origin.is_relative_to(base.resolve()):
        return f"{name}: imported from {origin}, not from the install its RECORD checks ({base})", ""
    if hashlib.sha256(data).hexdigest() != expected.record_sha256:
        return f"{name}: its RECORD is not prepare's ({found.version}, prepared {expected.version})", ""
    if fingerprint(base, listed) == expected.fingerprint:
        return None, f"{name} {found.version} as prepared"
    problems = drift(base, listed)
    return (named(name, problems) if problems else None), f"{name} {found.version} hashed again: as its RECORD"


def check(recorded: InstalledCode) -> tuple[bool, str]:
    """Preflight's: the packages and the start-up code as prepare recorded them, each drift named."""
    problems, notes = [], []
    for name, expected in sorted(recorded.distributions.items()):
        problem, note = _distribution_problem(name, expected)
        problems += [problem] if problem else []
        notes += [note] if note else []
    problems += startup_problems(recorded.startup, startup())
    if problems:
        return False, "; ".join(problems)
    return True, "; ".join(notes + [f"{len(recorded.startup)} start-up files as prepared"])

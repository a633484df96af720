"""The harness: every project file whose bytes can change what a cell measures.

Digests are taken at prepare, before anything runs (a changed input recorded
after the fact is recorded silently), compared again before `run` starts, and
once more at the seal. Besides the project's own code, the files a cell's pytest
session reads for the campaign's targets (`campaign.planning.targetfiles`) are harness
files, and so are those of a test file of the user's own outside the project, with its
rootdir and listed data files (`campaign.planning.ownfile`; keyed by absolute path). The
targets come from prepare.json, so each comparison looks at the same paths, and a file
that appears at one of them since prepare is a change.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from campaign.contract.canonical import sha256_file
from campaign.contract.errors import InputError
from campaign.contract.rootrecords import Prepare
from campaign.planning import checkout, ownfile, targetfiles

PROJECT_ROOT = Path(__file__).resolve().parents[2]
HARNESS_DIRS = ("campaign", "worker", "plugins", "reaccount", "ops")
HARNESS_SUFFIXES = {".py", ".csv", ".yaml", ".yml", ".json", ".toml"}
HARNESS_FILES = ("pyproject.toml",)   # the root's pytest configuration and conftest.py: targetfiles


class OwnReads(NamedTuple):
    """One workload's own test file outside the project, as prepare.json records it."""

    rootdir: str
    targets: tuple[str, ...]          # absolute
    data: tuple[str, ...]             # absolute


def harness_files(project_root: Path = PROJECT_ROOT, targets: Iterable[str] = (),
                  own: Iterable[OwnReads] = ()) -> list[Path]:
    files = [project_root / name for name in HARNESS_FILES if (project_root / name).is_file()]
    for folder in HARNESS_DIRS:
        base = project_root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in HARNESS_SUFFIXES and "__pycache__" not in path.parts:
                files.append(path)
    known = set(files)
    targets = tuple(targets)
    # a FlagGems checkout's targets are absolute: its files are read with the checkout as the root
    read = targetfiles.candidates(project_root, targets) | checkout.harness_paths(targets)
    for entry in own:
        read |= ownfile.reads(Path(entry.rootdir), entry.targets, entry.data)
    # present but not a regular file (a FIFO conftest.py, a dangling link): kept, so digesting names it
    files += sorted(path for path in read if path not in known and (path.is_file() or os.path.lexists(path)))
    return files


def harness_name(project_root: Path, path: Path) -> str:
    """A harness file's key: relative to the project root, absolute for a checkout outside it."""
    try:
        return path.relative_to(project_root).as_posix()
    except ValueError:
        return path.as_posix()


def harness_digests(project_root: Path = PROJECT_ROOT, targets: Iterable[str] = (),
                    own: Iterable[OwnReads] = ()) -> dict[str, str]:
    """Relative path -> SHA-256 of every harness file, those the ``targets`` and ``own`` files read included."""
    digests = {}
    for path in harness_files(project_root, targets, own):
        try:
            digests[harness_name(project_root, path)] = sha256_file(path)
        except OSError as exc:   # a FIFO, device or link loop where a cell would read a file: named, never waited on
            raise InputError(f"harness file {path}: cannot be digested: {exc.strerror or exc}") from None
    return digests


def recorded_digests(project_root: Path, resolved_targets: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The harness digests of the files prepare.json's ``resolved_targets`` make cells read: what
    prepare records and what run and the seal compute again (one function for both sides)."""
    return harness_digests(project_root, record_targets(resolved_targets), record_own(resolved_targets))


def prepared_digests(project_root: Path, prepare: Prepare) -> dict[str, str]:
    """`recorded_digests` of a root's prepare record: what run, a Ray node and the seal compare."""
    return recorded_digests(project_root, {name: entry.dump() for name, entry in prepare.resolved_targets.items()})


def record_own(resolved_targets: dict[str, dict[str, Any]]) -> tuple[OwnReads, ...]:
    """The own test files (those with a ``rootdir``) of prepare.json's ``resolved_targets``."""
    return tuple(OwnReads(entry["rootdir"], _targets_of(entry), tuple(entry.get("data") or ()))
                 for _, entry in sorted(resolved_targets.items()) if entry.get("rootdir"))


def _targets_of(entry: dict[str, Any]) -> tuple[str, ...]:
    # shape_file: the campaign's own, absolute (`campaign.planning.checkout.harness_paths` reads it)
    found = {t for t in (entry.get("benchmark"), entry.get("correctness"), entry.get("shape_file")) if t}
    return tuple(sorted(found | set(entry.get("correctness_node_ids") or ())))


def record_targets(resolved_targets: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    """Every target of the project or a checkout prepare.json's ``resolved_targets`` names (own
    test files: `record_own`)."""
    found: set[str] = set()
    for entry in resolved_targets.values():
        if entry.get("rootdir"):
            continue
        found.update(_targets_of(entry))
    return tuple(sorted(found))


def combined_digest(digests: dict[str, str]) -> str:
    lines = "".join(f"{name}\t{digest}\n" for name, digest in sorted(digests.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def changed_files(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """Names added, removed or changed between two digest maps, sorted."""
    names = set(recorded) | set(current)
    return sorted(name for name in names if recorded.get(name) != current.get(name))

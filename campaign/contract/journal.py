"""digests.jsonl: each cell's files digested when the cell ends, journalled in the root.

The runner appends one line per ended cell, just before its status row (`campaign.contract.status`):
``{"task": TASK_ID, "files": {REL_PATH: [SHA256, SIZE], ...}}``, every regular file of the cell's
folder, paths relative to the root. The seal (`campaign.sealing.receipt.require_sealable`) and
`campaign verify` compare each finished cell's folder with the task's last line, so evidence
edited, removed or added after its cell ended -- before a first seal, or before a reseal over a
deleted receipt.json -- is refused by name.

The journal is a checksum record, not a signature: whoever can rewrite the root can rewrite it
too. A line torn by a killed runner is the last one, and its task has no status row yet (it runs
again and journals anew); any other line that does not parse is itself a finding. A root
prepared before cells were journalled has no digests.jsonl, and its cells are checked against
the receipt only.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from campaign.contract import canonical, faults, regular
from campaign.contract.artifacts import cell_dir

JOURNAL_FILE = "digests.jsonl"
_APPEND = threading.Lock()      # the cards' runners and IR-pass lanes end cells at once
NONE_KNOWN: Mapping[str, tuple[str, int]] = MappingProxyType({})


def _sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def folder_digests(root: Path, task_id: str, known: Mapping[str, tuple[str, int]] = NONE_KNOWN
                   ) -> dict[str, tuple[str, int]]:
    """Every regular file under the task's cell folder (links never followed) -> (sha256, size). A
    path in ``known`` was digested by the caller a moment before (verify, against the receipt): its
    digest is taken from there, not read again."""
    root, found = Path(root), {}
    for folder, _, names in os.walk(cell_dir(root, task_id), followlinks=False):
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                rel = path.relative_to(root).as_posix()
                found[rel] = known[rel] if rel in known else _sha256(path)
    return dict(sorted(found.items()))


def append(root: Path, task_id: str) -> None:
    """Journal the task's cell folder as it is now: one line, one write, fsync'd. A task without
    a folder (skipped by adaptive rounds) has no evidence to journal."""
    if not cell_dir(root, task_id).is_dir():
        return
    path = Path(root) / JOURNAL_FILE
    files = {rel: list(entry) for rel, entry in folder_digests(root, task_id).items()}
    line = json.dumps({"task": task_id, "files": files}, sort_keys=True, separators=(",", ":")) + "\n"
    with _APPEND, faults.naming(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def read(root: Path) -> tuple[dict[str, dict[str, tuple[str, int]]], list[str]]:
    """(the last entry of each task, problems); ({}, []) when the root has no journal."""
    path = Path(root) / JOURNAL_FILE
    if not os.path.lexists(path):
        return {}, []
    try:
        lines = regular.read_regular(path, canonical.JSON_CAP).split(b"\n")
    except regular.NotRegular as exc:
        return {}, [f"not a regular file: {exc.strerror}"]
    except regular.TooLarge as exc:
        return {}, [str(exc)]
    entries, problems = {}, []
    for number, raw in enumerate(lines, 1):
        if not raw:
            continue
        try:
            data = canonical.parse_json(raw)
            entries[data["task"]] = {rel: (sha, size) for rel, (sha, size) in data["files"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            if number < len(lines):     # not the torn last line of a killed runner
                problems.append(f"line {number}: not a journal entry")
    return entries, problems


def differences(root: Path, tasks: set[str], known: Mapping[str, tuple[str, int]] = NONE_KNOWN
                ) -> list[tuple[str, str]]:
    """(path, what) for each file of ``tasks``' cell folders changed, removed or added since its cell
    ended, and for each line of the journal that does not parse. ``known``: as `folder_digests`."""
    entries, problems = read(root)
    found = [(JOURNAL_FILE, problem) for problem in problems]
    for task_id in sorted(tasks & set(entries)):
        ended, now = entries[task_id], folder_digests(root, task_id, known)
        for rel in sorted(set(ended) | set(now)):
            if rel not in now:
                found.append((rel, "removed since its cell ended"))
            elif rel not in ended:
                found.append((rel, "added since its cell ended"))
            elif now[rel] != ended[rel]:
                found.append((rel, f"changed since its cell ended: sha256 {now[rel][0][:12]} size {now[rel][1]}, "
                                   f"journalled {ended[rel][0][:12]} size {ended[rel][1]}"))
    return found

"""What a run root holds, read without trusting it: regular files and folders only.

Sealing and verifying both walk a root with `scan`. Symbolic links are never
followed and FIFOs, sockets and devices are never opened: each comes back by
name as a refusal, so that a planted link cannot make a digest stand for content
outside the root, and a FIFO or /dev/zero cannot hang the reader. Files are
hashed through `sha256_regular`, which opens with O_NOFOLLOW|O_NONBLOCK and
checks what it opened, so a file swapped for a link or a FIFO between the
listing and the read is refused as well.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from campaign.contract import faults
from campaign.contract.regular import NotRegular, describe, open_regular, read_regular
from campaign.contract.runroot import RunRoot

__all__ = ["NotRegular", "Tree", "describe", "open_regular", "read_regular", "scan", "sha256_regular"]

# What a sealed root's entries are set to; the receipt records them and verify compares.
SEALED_FILE_MODE = 0o444
SEALED_FOLDER_MODE = 0o555


@dataclass
class Tree:
    files: dict[str, Path] = field(default_factory=dict)     # relative POSIX path -> path
    folders: dict[str, Path] = field(default_factory=dict)   # every folder below the root
    refused: dict[str, str] = field(default_factory=dict)    # relative path -> what it is


def mode_text(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"


def scan(root: RunRoot, leave_out: frozenset[str] = frozenset()) -> Tree:
    """Every regular file and folder under ``root`` (sorted), and every other entry as a refusal."""
    top = root.path
    tree = Tree()
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            tree.refused[folder.relative_to(top).as_posix()] = f"folder cannot be listed: {exc.strerror}"
            continue
        for entry in entries:
            path = Path(entry.path)
            rel = path.relative_to(top).as_posix()
            if rel in leave_out:
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:   # gone or unreadable since the listing: named, never a traceback
                tree.refused[rel] = f"cannot be read: {exc.strerror}"
                continue
            if stat.S_ISDIR(mode):
                tree.folders[rel] = path
                pending.append(path)
            elif stat.S_ISREG(mode):
                tree.files[rel] = path
            else:
                tree.refused[rel] = describe(path, mode)
    tree.files = dict(sorted(tree.files.items()))
    tree.folders = dict(sorted(tree.folders.items()))
    tree.refused = dict(sorted(tree.refused.items()))
    return tree


def sha256_regular(path: Path) -> tuple[str, int]:
    """(SHA-256, size) of a regular file, read through `open_regular`."""
    digest, size = hashlib.sha256(), 0
    with os.fdopen(open_regular(path), "rb") as handle, faults.naming(path):   # an EIO names its file
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size

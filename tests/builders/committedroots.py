"""The sealed roots committed under receipts/ (``receipts/<root>/root.tar.gz``), unpacked once for
the session by `conftest.committed_roots`: the records tests and the receipts tests each unpacked
every archive for themselves (about 12 CPU-seconds each, 1.2 GB written).

Unpacked, a root is read-only to its readers: a test that writes beside one works on its own copy.
"""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

from conftest import PROJECT_ROOT

RECEIPTS = PROJECT_ROOT / "receipts"
ARCHIVES = sorted(RECEIPTS.glob("*/root.tar.gz"))
ROOTS = "roots"
NAMES = "names.json"        # written last: the unpacking finished


def unpack(into: Path) -> None:
    """Every committed archive into ``into``/roots, modes kept (a v2 receipt records them); the
    top-level names each archive holds, by its folder under receipts/, into ``into``/names.json."""
    names = {}
    for archive in ARCHIVES:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            names[archive.parent.name] = sorted({member.name.split("/")[0] for member in members})
            tar.extractall(into / ROOTS, members=members, filter="tar")
    (into / NAMES).write_text(json.dumps(names, sort_keys=True), encoding="utf-8")


def names(base: Path) -> dict[str, list[str]]:
    """The top-level names each archive held, by its folder under receipts/."""
    return json.loads((base / NAMES).read_text(encoding="utf-8"))

"""Canonical JSON and SHA-256: the one way anything hashed or reviewed is written, and the one way
JSON is read back (`read_json`, `parse_json`: bounded in size and depth)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from campaign.contract import faults
from campaign.contract.regular import open_regular, read_regular

# The caps of every JSON read: the largest record a root holds (a receipt of ~10^5 files) is a few
# tens of MB and a few levels deep; past these a file is refused by name, never a MemoryError or a
# RecursionError.
JSON_CAP = 256 << 20
DEPTH_CAP = 64


def dumps(data: Any) -> str:
    """Sorted keys, fixed separators, UTF-8 kept, trailing newline: byte-stable."""
    return json.dumps(data, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """A regular file's SHA-256 (links followed); a FIFO or a device raises `campaign.contract.regular.NotRegular`, never waited on."""
    digest = hashlib.sha256()
    with os.fdopen(open_regular(path, follow=True), "rb") as handle, faults.naming(path):
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_new(path: Path, text: str) -> None:
    """Write a file that must not exist yet: nothing is ever overwritten."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def write_json_new(path: Path, data: Any) -> None:
    write_new(path, dumps(data))


class Unreadable(ValueError):
    """JSON that cannot be read as a record: too large, too deep, not UTF-8, not JSON."""


def _depth(data: Any) -> int:
    """How deeply ``data`` nests lists and objects (walked without recursion)."""
    deepest, pending = 0, [(data, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(raw: bytes, where: str = "JSON") -> Any:
    """``raw`` as JSON, nested at most `DEPTH_CAP` deep; anything else an `Unreadable` naming ``where``."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise Unreadable(f"{where}: nested deeper than {DEPTH_CAP} levels: not a record") from None
    except ValueError as exc:   # not UTF-8, a byte-order mark, not JSON, an integer of 4,300 digits
        raise Unreadable(f"{where}: not JSON: {str(exc).splitlines()[0]}") from None
    if _depth(data) > DEPTH_CAP:
        raise Unreadable(f"{where}: nested deeper than {DEPTH_CAP} levels: not a record")
    return data


def read_json(path: Path, cap: int = JSON_CAP, follow: bool = False) -> Any:
    """The one JSON reader: a regular file (`campaign.contract.regular`: a FIFO, device or link raises
    `regular.NotRegular`, an OSError, unopened) of at most ``cap`` bytes, parsed by `parse_json`.
    ``follow``: a path of the user's own, where a symbolic link is followed."""
    return parse_json(read_regular(Path(path), cap, follow), str(path))

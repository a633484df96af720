"""Canonical JSON and SHA-256: the one way anything hashed or reviewed is written."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


def dumps(data: Any) -> str:
    """Sorted keys, fixed separators, UTF-8 kept, trailing newline: byte-stable."""
    return json.dumps(data, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
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


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)

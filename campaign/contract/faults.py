"""Faults of the machine under a run -- a full disk, a path that cannot be written -- named.

The runner writes at a few edges only: a cell's folder, its task.json and logs,
the status row, the caches in the scratch dir, the seal. An OSError at any of
them stops the run with ``RUN_FAILED check=disk`` (no space, no quota) or
``check=write`` (anything else), the path and the OS error, exit 1. Nothing
finished is lost by stopping there: a status row is one append, and a cell
without a row is set aside and run again on resume (`campaign.running.runner`).
"""
from __future__ import annotations

import errno
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from campaign.contract.errors import Refused

_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Give an OSError raised inside the path it was about, where the OS gave none (write, fsync, close)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_failed(exc: OSError, resume: str) -> Refused:
    """The refusal for an OSError the run cannot go on after; ``resume`` says how to go on once fixed."""
    check = "disk" if exc.errno in _NO_SPACE else "write"
    where = exc.filename if exc.filename is not None else "(the OS named no path)"
    if exc.filename2 is not None:
        where = f"{where} -> {exc.filename2}"
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else "?"
    what = exc.strerror or str(exc)
    return Refused("RUN_FAILED", check, f"{where}: {what} ({code}); the cells finished before it keep their "
                   f"status rows and folders; {'free space' if check == 'disk' else 'make it writable'}, "
                   f"then {resume}")

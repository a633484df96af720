"""Faults of the machine under a run -- a full disk, a path that cannot be written -- named.

The runner writes at a few edges only: a cell's folder, its task.json and logs,
the status row, the caches in the scratch dir, the seal. An OSError at any of
them stops the run with ``RUN_FAILED check=disk`` (no space, no quota) or
``check=write`` (anything else), the path and the OS error, exit 1. Nothing
finished is lost by stopping there: a status row is one append, and a cell
without a row is set aside and run again on resume (`campaign.running.runner`).

A cell's worker that meets a write fault (`WRITE_ERRNOS`, in its own files, the rows a plugin
writes, or the Triton and tuner caches in the scratch dir) writes no result: it prints one
`fault_line` and exits `EXIT_WRITE_FAULT`; the runner turns that line back into the OSError
(`from_worker`) and stops as for its own writes, so that cell has no row and resume runs it again.
"""
from __future__ import annotations

import errno
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Iterator, Optional

from campaign.contract.errors import RUN_FAILED, RefusalPrefix, Refused, WorkerExit

_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
# the faults of the machine, not of the cell: a cell that meets one is run again once they are fixed
WRITE_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
# a worker's exit when it met one (`campaign.contract.errors.WORKER_EXITS` names it ``write_fault``)
EXIT_WRITE_FAULT: Final = int(WorkerExit.WRITE_FAULT)
_LINE = "WRITE_FAULT"
_PARSE = re.compile(rf"^{_LINE} errno=(\w+) path=(.*): (.*)$")


@contextmanager
def naming(path: Path) -> Iterator[None]:
    """Give an OSError raised inside the path it was about, where the OS gave none (write, fsync, close)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_fault(exc: Optional[BaseException]) -> Optional[OSError]:
    """The write fault in ``exc`` or the exceptions it was raised from, or None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def fault_line(exc: OSError) -> str:
    """The one line a worker prints for its write fault; `from_worker` reads it back."""
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else "None"
    path = exc.filename if exc.filename is not None else ""
    return f"{_LINE} errno={code} path={path}: {exc.strerror or exc}"


def from_worker(log: str, cell_dir: Path) -> OSError:
    """The write fault a cell's worker exited on (`EXIT_WRITE_FAULT`), from its log's last `fault_line`;
    the cell folder where the OS named no file, or the worker could not say which."""
    for line in reversed(log.splitlines()):
        found = _PARSE.match(line.strip())
        if found and hasattr(errno, found[1]):
            path = found[2] or f"{cell_dir} (a write by its worker; the OS named no file)"
            return OSError(getattr(errno, found[1]), found[3], path)
    return OSError(None, f"its worker exited {EXIT_WRITE_FAULT} (a write fault) and its log could not say which",
                   str(cell_dir))


# a file that is there but cannot be read (a failing disk, a stale mount, no permission): named, never a traceback
READ_ERRNOS = frozenset({errno.EIO, errno.EACCES, errno.ESTALE})


def read_failed(exc: BaseException, command: str) -> Optional[Refused]:
    """The refusal for a read error (`READ_ERRNOS`) that reached the CLI, naming the file; None for anything else."""
    if not isinstance(exc, OSError) or exc.errno not in READ_ERRNOS:
        return None
    code = errno.errorcode.get(exc.errno, str(exc.errno))
    where = exc.filename if exc.filename is not None else "(the OS named no path)"
    return Refused(f"{command.upper()}_FAILED", "read", f"{where}: {exc.strerror or exc} ({code}): the file cannot "
                   "be read; nothing was derived from it")


_KEPT = "the cells finished before it keep their status rows and folders, the cell it stopped has none and runs again"


def write_failed(exc: OSError, resume: str, prefix: RefusalPrefix = RUN_FAILED, kept: str = _KEPT) -> Refused:
    """The refusal for an OSError the run (or ``prefix``'s command) cannot go on after; ``kept`` says what
    is left as it was, ``resume`` how to go on once fixed."""
    check = "disk" if exc.errno in _NO_SPACE else "write"
    where = exc.filename if exc.filename is not None else "(the OS named no path)"
    if exc.filename2 is not None:
        where = f"{where} -> {exc.filename2}"
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else "None" if exc.errno is not None else "?"
    what = exc.strerror or str(exc)
    fix = ("free space" if check == "disk" else "raise the file-size limit (ulimit -f)" if exc.errno == errno.EFBIG
           else "make it writable")
    return Refused(prefix, check, f"{where}: {what} ({code}); {kept}; {fix}, then {resume}")

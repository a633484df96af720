"""Opening a file that must be a regular file, bounded: the one check before every read.

A path in a run root, or one a manifest names, may be anything: a FIFO (opening it for reading
waits for a writer that never comes), a device (/dev/zero never ends), a socket, a link that
points outside the root or at itself. `open_regular` opens with O_NONBLOCK (and O_NOFOLLOW inside
a root) and checks what it opened with fstat, so each of those is refused by name
(`NotRegular`) without being waited on, and a file swapped for one between a listing and the read
is refused as well. `read_regular` adds a size cap (`TooLarge`): a file the size of a disk is a
named refusal, not a MemoryError. JSON goes through `campaign.contract.canonical.read_json`,
which reads here.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional

from campaign.contract import faults


class NotRegular(OSError):
    """A path that was to be read as a regular file is something else; ``strerror`` says what."""


class TooLarge(ValueError):
    """A file over the cap of what it may hold."""


def describe(path: Path, mode: int) -> str:
    """What a non-regular entry is, in words a reviewer can act on; nothing is opened."""
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        try:
            os.stat(path)
        except FileNotFoundError:
            return f"symbolic link to {target} (dangling)"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return f"symbolic link to {target} (a loop)"
            return f"symbolic link to {target} ({exc.strerror})"
        return f"symbolic link to {target} (never followed)"
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (never opened)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device (never opened)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return f"not a regular file (mode {stat.S_IFMT(mode):o})"


def not_regular(path: Path, follow: bool = True) -> Optional[str]:
    """Why ``path`` is not a regular file to read (no such file, a FIFO, a loop of links, ...), or None."""
    try:
        mode = os.stat(path).st_mode if follow else os.lstat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return _loop(Path(path), follow) if exc.errno == errno.ELOOP else f"cannot be read: {exc.strerror}"
    except ValueError as exc:    # a NUL in the name
        return f"cannot be read: {exc}"
    return None if stat.S_ISREG(mode) else describe(Path(path), mode)


def open_regular(path: Path, follow: bool = False) -> int:
    """A read-only descriptor of a regular file; a FIFO, socket or device raises `NotRegular` unwaited,
    and so does a symbolic link unless ``follow`` (a user's own paths may be links; a root's never
    are), where a loop of links is refused by name."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:   # O_NOFOLLOW on a link, or a loop of links
            raise NotRegular(errno.ELOOP, _loop(path, follow), str(path)) from None
        if exc.errno == errno.ENXIO:   # a socket
            raise NotRegular(errno.ENXIO, "a socket", str(path)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, describe(Path(path), mode), str(path))
    return fd


def _loop(path: Path, follow: bool) -> str:
    try:
        return describe(Path(path), os.lstat(path).st_mode)
    except OSError:    # a folder on the way is the link: the OS says no more than that
        return "a loop of symbolic links" if follow else "a symbolic link on the way (never followed)"


def read_regular(path: Path, cap: Optional[int] = None, follow: bool = False) -> bytes:
    """The bytes of a regular file (`open_regular`); over ``cap`` bytes raises `TooLarge` unread."""
    with os.fdopen(open_regular(path, follow), "rb") as handle, faults.naming(path):   # an EIO names its file
        if cap is None:
            return handle.read()
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(cap + 1) if size <= cap else b""
        if size > cap or len(data) > cap:
            raise TooLarge(f"{path}: {max(size, len(data))} bytes, over the cap of {cap} bytes")
        return data

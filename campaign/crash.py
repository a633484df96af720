"""An unexpected exception: one line on stderr naming a crash log, never a bare traceback.

The log (the traceback, the argv, the versions) is written beside the root the command was
given, never inside it (a sealed root is never written), or in the system temp dir when
there is no root or its folder cannot be written.
"""
from __future__ import annotations

import os
import platform
import sys
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Sequence

from campaign import __version__


def _text(exc: BaseException, argv: Sequence[str]) -> str:
    return "".join([f"campaign {__version__}, python {platform.python_version()}, {platform.platform()}\n",
                    f"argv: campaign {' '.join(argv)}\n", f"cwd: {os.getcwd()}\n\n",
                    *traceback.format_exception(type(exc), exc, exc.__traceback__)])


def write_log(exc: BaseException, argv: Sequence[str], root: Optional[Path]) -> Path:
    """Write the crash log and return its path: ``<root>.crash-<utc>.log`` beside the root, else
    ``campaign-crash-<utc>-<pid>.log`` in the temp dir."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    text = _text(exc, argv)
    places = []
    if root is not None and Path(root).name:
        places.append(Path(root).resolve().parent / f"{Path(root).name}.crash-{stamp}.log")
    places.append(Path(tempfile.gettempdir()) / f"campaign-crash-{stamp}-{os.getpid()}.log")
    for path in places:
        try:
            with open(path, "x", encoding="utf-8") as log:
                log.write(text)
            return path
        except OSError:
            continue
    raise exc   # nowhere to write: the traceback itself is the last record


def report(exc: BaseException, argv: Sequence[str], root: Optional[Path]) -> None:
    """The one line: what broke and where the log is."""
    path = write_log(exc, argv, root)
    first = str(exc).splitlines()[0] if str(exc) else ""
    print(f"campaign: unexpected error: {type(exc).__name__}{': ' + first if first else ''}"
          f"; the traceback is in {path} (include it in a bug report)", file=sys.stderr)

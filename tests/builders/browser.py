"""A page in a real headless browser: Debian's chromium, which `.ci/run` installs when it is absent.

`dump_dom` loads a file and returns the DOM after its load event (the page's own script has run
by then and set ``body[data-status]``); `screenshot` writes a PNG. Where chromium is not installed
and cannot be, `need_chromium` skips with the reason printed, never silently.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

FLAGS = ("--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage")
MISSING = ("chromium is not installed and could not be here: .ci/run installs it from Debian's packages "
           "(apt-get install -y --no-install-recommends chromium, as root or with sudo)")


def need_chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        print(f"SKIP: {MISSING}")
        pytest.skip(MISSING)
    return path


def dump_dom(page: Path, fragment: str = "", timeout: float = 120) -> tuple[str, float]:
    """The rendered DOM of ``page`` (``fragment``: what follows '#' in its address) and the wall seconds taken."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    start = time.monotonic()
    done = subprocess.run([need_chromium(), *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, time.monotonic() - start


def screenshot(page: Path, out: Path, size: str = "1400,2400", timeout: float = 120) -> Path:
    done = subprocess.run([need_chromium(), *FLAGS, f"--screenshot={out}", f"--window-size={size}",
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0 and out.is_file(), done.stderr[-2000:]
    return out

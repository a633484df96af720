"""Shared fixtures. Tests never rely on hidden global state: the environment and
the working directory are checked unchanged after every test."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT_ROOT / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _no_global_state():
    env_before = dict(os.environ)
    cwd_before = os.getcwd()
    yield
    assert os.getcwd() == cwd_before, "a test changed the working directory"
    changed = {k for k in set(env_before) | set(os.environ)
               if env_before.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST"}
    assert not changed, f"a test changed os.environ: {sorted(changed)}"


def run_cli(*args: str, cwd: Path = PROJECT_ROOT, timeout: float = 300, env: dict | None = None):
    """The CLI as a real subprocess: ``sys.executable -m campaign ...``."""
    return subprocess.run([sys.executable, "-m", "campaign", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
